#include "bench/common/controller_load_workers.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "bench/common/process.h"

namespace ddp::bench {
namespace {

double secondsBetween(TimePoint a, TimePoint b) { return std::chrono::duration<double>(b - a).count(); }

// Index just past the JSON string starting at json[i] (a '"').
size_t skipString(std::string_view json, size_t i) {
  for (size_t j = i + 1; j < json.size(); ++j) {
    if (json[j] == '\\') {
      ++j;
    } else if (json[j] == '"') {
      return j + 1;
    }
  }
  return json.size();
}

size_t skipSpace(std::string_view json, size_t i) {
  while (i < json.size() && (json[i] == ' ' || json[i] == '\n' || json[i] == '\r' || json[i] == '\t')) ++i;
  return i;
}

std::string shorten(const std::string& s, size_t n = 300) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(q * static_cast<double>(sorted.size()) + 0.999999);  // nearest rank
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

std::optional<int64_t> topLevelJsonInt(std::string_view json, std::string_view key) {
  size_t i = skipSpace(json, 0);
  if (i >= json.size() || json[i] != '{') return std::nullopt;
  ++i;
  int depth = 1;
  bool expectKey = true;
  while (i < json.size()) {
    const char ch = json[i];
    if (ch == '"') {
      const size_t end = skipString(json, i);
      if (depth == 1 && expectKey) {
        const std::string_view k = json.substr(i + 1, end - i - 2);
        size_t j = skipSpace(json, end);
        if (j < json.size() && json[j] == ':') j = skipSpace(json, j + 1);
        if (k == key) {
          int64_t v = 0;
          bool neg = j < json.size() && json[j] == '-';
          if (neg) ++j;
          const size_t digits = j;
          while (j < json.size() && json[j] >= '0' && json[j] <= '9') v = v * 10 + (json[j++] - '0');
          if (j == digits) return std::nullopt;
          return neg ? -v : v;
        }
        expectKey = false;
        i = j;
        continue;
      }
      i = end;
      continue;
    }
    if (ch == '{' || ch == '[') {
      ++depth;
    } else if (ch == '}' || ch == ']') {
      if (--depth == 0) return std::nullopt;
    } else if (ch == ',' && depth == 1) {
      expectKey = true;
    }
    ++i;
  }
  return std::nullopt;
}

SimulatedWorkers::SimulatedWorkers(SimulatedJob job, SimulatedWorkersOptions options)
    : job_(std::move(job)),
      options_(std::move(options)),
      hostPort_(job_.host + ":" + std::to_string(job_.port)),
      client_(job_.host, job_.port) {
  workers_.resize(static_cast<size_t>(job_.workers));
  for (int i = 0; i < job_.workers; ++i) workers_[static_cast<size_t>(i)].id = job_.name + "-w" + std::to_string(i);
}

Status SimulatedWorkers::openConnections(Deadline deadline) {
  DDP_RETURN_IF_ERROR(client_.init());
  for (int i = 0; i < job_.workers; ++i) {
    DDP_ASSIGN_OR_RETURN(int conn, client_.open());
    DDP_CHECK(conn == i);
  }
  while (client_.connected() < static_cast<size_t>(job_.workers)) {
    if (interrupted()) return abortedError("interrupted while opening connections");
    if (deadline.expired()) {
      return timeoutError(std::to_string(client_.connected()) + " of " + std::to_string(job_.workers) +
                          " connections to " + hostPort_ + " opened before the deadline");
    }
    DDP_RETURN_IF_ERROR(client_.poll(std::min(deadline.at(), std::chrono::steady_clock::now() + 50ms)));
  }
  return Status::ok();
}

Result<RendezvousResult> SimulatedWorkers::rendezvous(const std::function<Result<double>()>& controllerCpuSeconds) {
  const Deadline deadline = Deadline::after(options_.rendezvousTimeout);
  const TimePoint connectStart = std::chrono::steady_clock::now();
  DDP_RETURN_IF_ERROR(openConnections(deadline.min(Deadline::after(options_.connectTimeout))));
  rdzv_ = RendezvousResult{};
  rdzv_.connectSeconds = secondsBetween(connectStart, std::chrono::steady_clock::now());
  rankHolder_.assign(static_cast<size_t>(job_.workers), -1);
  std::vector<std::string> joins;
  joins.reserve(workers_.size());
  for (int i = 0; i < job_.workers; ++i) {
    char body[512];
    std::snprintf(body, sizeof body, R"({"workerId":"%s","host":"127.0.0.1","advertiseAddress":"127.0.0.1:%d","pid":%d})",
                  workers_[static_cast<size_t>(i)].id.c_str(), 20000 + i % 40000, static_cast<int>(::getpid()));
    joins.push_back(httpRequest("POST", "/v1/jobs/" + job_.name + "/workers", hostPort_, job_.workerToken,
                                "application/json", body));
  }
  client_.setOnResponse([this](int conn, LoadResponse& r) { onRendezvousResponse(conn, r); });
  double ctl0 = 0;
  if (controllerCpuSeconds) {
    DDP_ASSIGN_OR_RETURN(ctl0, controllerCpuSeconds());
  }
  const double cpu0 = processCpuSeconds();
  const TimePoint t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < job_.workers; ++i) {
    workers_[static_cast<size_t>(i)].phase = Phase::kJoining;
    client_.send(i, std::move(joins[static_cast<size_t>(i)]));
  }
  while (failure_.isOk() && assigned_ < job_.workers) {
    if (interrupted()) return abortedError("interrupted during the rendezvous");
    if (deadline.expired()) {
      return timeoutError("rendezvous of " + std::to_string(job_.workers) + " workers: " + std::to_string(joined_) +
                          " joined, " + std::to_string(assigned_) + " assigned before the deadline");
    }
    DDP_RETURN_IF_ERROR(client_.poll(deadline.at()));
  }
  client_.setOnResponse({});
  if (!failure_.isOk()) return failure_;
  rdzv_.clientCpuSeconds = processCpuSeconds() - cpu0;
  if (controllerCpuSeconds) {
    DDP_ASSIGN_OR_RETURN(const double ctl1, controllerCpuSeconds());
    rdzv_.controllerCpuSeconds = ctl1 - ctl0;
  }
  rdzv_.joinSeconds = secondsBetween(t0, lastJoin_);
  rdzv_.seconds = secondsBetween(t0, lastAssigned_);
  rdzv_.generation = generation_;
  for (int r = 0; r < job_.workers; ++r) {
    if (rankHolder_[static_cast<size_t>(r)] < 0) return internalError("rank " + std::to_string(r) + " was handed to nobody");
  }
  return rdzv_;
}

void SimulatedWorkers::onRendezvousResponse(int conn, LoadResponse& r) {
  if (!failure_.isOk()) return;
  Worker& w = workers_[static_cast<size_t>(conn)];
  const bool joining = w.phase == Phase::kJoining;
  auto failWith = [&](const std::string& why) {
    failure_ = unavailable(std::string(joining ? "join" : "assignment") + " of " + w.id + ": " + why);
  };
  if (r.status == 0) return failWith(r.error);
  if (joining) {
    if (r.status != 200) return failWith("HTTP " + std::to_string(r.status) + " " + shorten(r.body));
    if (++joined_ == job_.workers) lastJoin_ = r.doneAt;
    w.phase = Phase::kPolling;
  } else if (w.phase == Phase::kPolling) {
    if (r.status == 200) {
      rdzv_.assignmentBytes += static_cast<int64_t>(r.body.size());
      const auto rank = topLevelJsonInt(r.body, "rank");
      const auto world = topLevelJsonInt(r.body, "worldSize");
      const auto generation = topLevelJsonInt(r.body, "generation");
      if (!rank || !world || !generation) return failWith("no rank/worldSize/generation in " + shorten(r.body));
      if (*world != job_.workers) {
        return failWith("worldSize " + std::to_string(*world) + ", expected " + std::to_string(job_.workers));
      }
      if (*rank < 0 || *rank >= job_.workers) return failWith("rank " + std::to_string(*rank) + " out of range");
      int& holder = rankHolder_[static_cast<size_t>(*rank)];
      if (holder >= 0) {
        return failWith("rank " + std::to_string(*rank) + " handed out twice (also to " +
                        workers_[static_cast<size_t>(holder)].id + ")");
      }
      if (generation_ != 0 && *generation != generation_) {
        return failWith("generation " + std::to_string(*generation) + ", others got " + std::to_string(generation_));
      }
      generation_ = *generation;
      holder = conn;
      w.rank = static_cast<int>(*rank);
      w.phase = Phase::kDone;
      ++assigned_;
      lastAssigned_ = r.doneAt;
      return;
    }
    if (r.status != 204) return failWith("HTTP " + std::to_string(r.status) + " " + shorten(r.body));
  } else {
    return failWith("response in an unexpected phase");
  }
  ++rdzv_.polls;
  client_.send(conn, httpRequest("GET",
                                 "/v1/jobs/" + job_.name + "/workers/" + w.id + "/assignment?wait_ms=" +
                                     std::to_string(options_.waitMs),
                                 hostPort_, job_.workerToken));
}

void SimulatedWorkers::sendBeat(int conn) {
  Worker& w = workers_[static_cast<size_t>(conn)];
  const int step = w.beatsSent++;
  char body[1024];
  std::snprintf(body, sizeof body,
                R"({"workerId":"%s","rank":%d,"state":"Running","step":%d,"totalSteps":1000,"epoch":0,"epochs":1,)"
                R"("loss":%.4f,"samplesPerSecond":12000.0,"testAccuracy":null,)"
                R"("counters":{"samples":%d,"steps":%d,"stepSeconds":0.0125,"commBytes":%d,"commExposedSeconds":0.001,)"
                R"("compressionUncompressedBytes":0,"compressionSentBytes":0},)"
                R"("collectives":[],"checkpoint":null,"message":"","ext":{}})",
                w.id.c_str(), w.rank, step, 2.3 / (1.0 + step), step * 64, step, step * 4096);
  client_.send(conn, httpRequest("POST",
                                 "/v1/jobs/" + job_.name + "/generations/" + std::to_string(generation_) + "/heartbeat",
                                 hostPort_, job_.workerToken, "application/json", body));
}

Result<HeartbeatResult> SimulatedWorkers::heartbeat(int seconds, const std::function<Result<double>()>& controllerCpuSeconds) {
  if (assigned_ != job_.workers) return failedPrecondition("heartbeat() before a complete rendezvous()");
  const int64_t n = job_.workers;
  const int64_t total = n * seconds;
  std::vector<double> latencies;
  latencies.reserve(static_cast<size_t>(total));
  HeartbeatResult out;
  TimePoint lastDone{};
  const TimePoint start = std::chrono::steady_clock::now() + 200ms;
  if (options_.keepSamples) out.samples.reserve(static_cast<size_t>(total));
  // The callback refers to locals: drop it on every way out.
  struct ClearCallback {
    ControllerLoadClient& client;
    ~ClearCallback() { client.setOnResponse({}); }
  } clearCallback{client_};
  client_.setOnResponse([&](int conn, LoadResponse& r) {
    ++out.requests;
    lastDone = r.doneAt;
    if (r.status != 200) {
      ++out.errors;
      if (out.firstError.empty()) {
        out.firstError = workers_[static_cast<size_t>(conn)].id + ": " +
                         (r.status == 0 ? r.error : "HTTP " + std::to_string(r.status) + " " + shorten(r.body));
      }
    } else {
      latencies.push_back(r.ms());
    }
    if (options_.keepSamples) {
      out.samples.push_back({secondsBetween(start, r.sentAt), r.status == 200 ? r.ms() : -1.0, conn});
    }
    Worker& w = workers_[static_cast<size_t>(conn)];
    if (w.pendingBeats > 0) {
      --w.pendingBeats;
      sendBeat(conn);
    }
  });
  // Beat k of worker i is due at start + k * period + i * period / n.
  const Duration period = options_.heartbeatPeriod;
  auto due = [&](int64_t idx) {
    return start + (idx / n) * period + std::chrono::duration_cast<Duration>(period * (idx % n)) / n;
  };
  const Deadline deadline(start + seconds * period + options_.heartbeatGrace);
  while (std::chrono::steady_clock::now() < start) DDP_RETURN_IF_ERROR(client_.poll(start));
  DDP_ASSIGN_OR_RETURN(const double ctl0, controllerCpuSeconds());
  const double cli0 = processCpuSeconds();
  const int64_t retries0 = client_.retries();
  int64_t cursor = 0;
  while (out.requests < total) {
    if (interrupted()) return abortedError("interrupted during the heartbeats");
    if (deadline.expired()) {
      return timeoutError("heartbeats of " + std::to_string(n) + " workers: " + std::to_string(out.requests) + " of " +
                          std::to_string(total) + " answered before the deadline (" +
                          std::to_string(client_.inFlight()) + " in flight)");
    }
    const TimePoint now = std::chrono::steady_clock::now();
    for (; cursor < total && due(cursor) <= now; ++cursor) {
      const int conn = static_cast<int>(cursor % n);
      if (client_.busy(conn)) {
        ++workers_[static_cast<size_t>(conn)].pendingBeats;
        ++out.deferred;
      } else {
        sendBeat(conn);
      }
    }
    DDP_RETURN_IF_ERROR(client_.poll(cursor < total ? std::min(due(cursor), deadline.at()) : deadline.at()));
  }
  DDP_ASSIGN_OR_RETURN(const double ctl1, controllerCpuSeconds());
  const double cli1 = processCpuSeconds();
  out.retries = client_.retries() - retries0;
  out.windowSeconds = secondsBetween(start, lastDone);
  out.controllerCpuCores = (ctl1 - ctl0) / out.windowSeconds;
  out.clientCpuCores = (cli1 - cli0) / out.windowSeconds;
  std::sort(latencies.begin(), latencies.end());
  double sum = 0;
  for (double x : latencies) sum += x;
  out.meanMs = latencies.empty() ? 0 : sum / static_cast<double>(latencies.size());
  out.p50Ms = percentile(latencies, 0.50);
  out.p99Ms = percentile(latencies, 0.99);
  out.maxMs = latencies.empty() ? 0 : latencies.back();
  return out;
}

}  // namespace ddp::bench
