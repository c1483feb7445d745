#include "worker/control/controller_client.h"

#include "common/store/http_store_wire.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "worker/control/worker_config.h"

namespace ddp::runtime {
namespace {

constexpr Duration kMinTimeout = std::chrono::milliseconds(1);
// Read timeout of a long poll beyond the hold asked for (the server answers at the hold's end).
constexpr Duration kLongPollGrace = std::chrono::seconds(1);
// The hold asked for ends this long before the caller's deadline.
constexpr Duration kLongPollMargin = std::chrono::milliseconds(100);
constexpr size_t kMaxErrorText = 300;

// Percent-encodes everything but RFC 3986 unreserved characters (job names and worker ids are
// DNS labels today; this keeps a future id from breaking the path).
std::string pathSegment(const std::string& s) { return comm::store_wire::encode(s); }

// The server's {"error": "..."} text, or the raw body (shortened) when it is not that.
std::string serverError(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    if (auto it = j.find("error"); it != j.end() && it->is_string()) return it->get<std::string>();
  }
  std::string text = body.substr(0, kMaxErrorText);
  if (body.size() > kMaxErrorText) text += "...";
  return text.empty() ? "(no body)" : text;
}

// A field of a JSON error body ("generation" of a 410, "state" of a 409), as text.
std::string errorField(const std::string& body, const char* key) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "?";
  auto it = j.find(key);
  if (it == j.end()) return "?";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string seconds(Duration d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", std::chrono::duration<double>(d).count());
  return buf;
}

}  // namespace

Status ControllerClientOptions::validate() const {
  std::string host;
  int port = 0;
  DDP_RETURN_IF_ERROR(parseControllerUrl(url, "controller url", &host, &port));
  if (job.empty()) return invalidArgument("controller client: job name is empty");
  if (token.empty()) return invalidArgument("controller client: token is empty");
  if (workerId.empty()) return invalidArgument("controller client: worker id is empty");
  if (connectTimeout <= Duration::zero()) return invalidArgument("controller client: connectTimeout must be > 0");
  if (initialBackoff <= Duration::zero() || maxBackoff < initialBackoff) {
    return invalidArgument("controller client: backoff must be > 0 with maxBackoff >= initialBackoff");
  }
  if (assignmentPoll <= Duration::zero()) return invalidArgument("controller client: assignmentPoll must be > 0");
  return Status::ok();
}

ControllerClient::ControllerClient(ControllerClientOptions options, std::string host, int port)
    : options_(std::move(options)), host_(std::move(host)), port_(port) {}

Result<std::unique_ptr<ControllerClient>> ControllerClient::create(ControllerClientOptions options) {
  while (!options.url.empty() && options.url.back() == '/') options.url.pop_back();
  DDP_RETURN_IF_ERROR(options.validate());
  std::string host;
  int port = 0;
  DDP_RETURN_IF_ERROR(parseControllerUrl(options.url, "controller url", &host, &port));
  return std::unique_ptr<ControllerClient>(new ControllerClient(std::move(options), std::move(host), port));
}

std::string ControllerClient::jobPath() const { return "/v1/jobs/" + pathSegment(options_.job); }

Result<ControllerClient::Reply> ControllerClient::send(Method method, const std::string& path,
                                                       const std::string& body, Deadline deadline,
                                                       Duration readTimeout, const std::string& what) const {
  if (deadline.expired()) {
    return timeoutError("controller at " + options_.url + ": the deadline passed before " + what + " was sent");
  }
  httplib::Headers headers = {{"Authorization", "Bearer " + options_.token}};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!incarnation_.empty()) headers.emplace(protocol::kIncarnationHeader, incarnation_);
  }
  Duration backoff = options_.initialBackoff;
  int attempts = 0;
  std::string lastError;
  while (true) {
    const Duration left = std::max(deadline.remaining(), kMinTimeout);
    httplib::Client cli(host_, port_);
    cli.set_keep_alive(false);
    cli.set_url_encode(false);  // paths are encoded here
    cli.set_connection_timeout(std::min(options_.connectTimeout, left));
    cli.set_read_timeout(std::max(std::min(readTimeout, left), kMinTimeout));
    cli.set_write_timeout(left);
    ++attempts;
    httplib::Result r = method == Method::kGet ? cli.Get(path, headers)
                                               : cli.Post(path, headers, body, "application/json");
    if (r && r->status != 503) return Reply{r->status, r->body};
    lastError = r ? "HTTP 503: " + serverError(r->body) : httplib::to_string(r.error());
    if (deadline.expired()) break;
    std::this_thread::sleep_for(std::min(backoff, deadline.remaining()));
    backoff = std::min(backoff * 2, options_.maxBackoff);
    if (deadline.expired()) break;
  }
  return unavailable("controller at " + options_.url + " unreachable during " + what + ": " + lastError + " (" +
                     std::to_string(attempts) + " attempts, retried until the deadline)");
}

Status ControllerClient::replyError(const Reply& reply, const std::string& what) const {
  const std::string text = serverError(reply.body);
  const std::string from = "controller at " + options_.url + " refused " + what + " (HTTP " +
                           std::to_string(reply.status) + "): " + text;
  switch (reply.status) {
    case 410: {
      const std::string why = serverError(reply.body);
      return abortedError(std::string(kFencedPrefix) + ", current " + errorField(reply.body, "generation") +
                          (why.empty() || why == "stale generation" ? "" : ": " + why));
    }
    case 401: return failedPrecondition(from + " (check the job token: DDP_JOB_TOKEN / --token-file)");
    case 404: return notFound(from);
    default: break;
  }
  if (reply.status >= 400 && reply.status < 500) return invalidArgument(from);
  return internalError("controller at " + options_.url + " answered " + what + " with HTTP " +
                       std::to_string(reply.status) + ": " + text);
}

Result<Registration> ControllerClient::registerWorker(const std::string& host, const std::string& advertiseAddress,
                                                      int64_t pid, Deadline deadline, const Rejoin& rejoin) const {
  const std::string what = "registration of worker " + options_.workerId;
  const std::string body = encodeRegistrationRequest(options_.workerId, host, advertiseAddress, pid, rejoin);
  DDP_ASSIGN_OR_RETURN(Reply r, send(Method::kPost, jobPath() + "/workers", body, deadline, deadline.remaining(), what));
  if (r.status == 409) {
    return failedPrecondition("controller at " + options_.url + " refused " + what + ": " + serverError(r.body) +
                              ": this process stops (another one holds the worker id)");
  }
  if (r.status != 200 && r.status != 201) return replyError(r, what);
  auto reg = decodeRegistration(r.body);
  if (!reg.isOk()) return internalError("controller at " + options_.url + ": " + reg.status().message());
  if (!reg->incarnation.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    incarnation_ = reg->incarnation;
  }
  return reg;
}

Result<Assignment> ControllerClient::awaitAssignment(Deadline deadline, int64_t after) const {
  const std::string what = "assignment of worker " + options_.workerId;
  const std::string base = jobPath() + "/workers/" + pathSegment(options_.workerId) + "/assignment?after=" +
                           std::to_string(after) + "&wait_ms=";
  const TimePoint start = SystemClock::instance().now();
  bool answered = false;  // the controller answered a poll: a failure at the deadline is a timeout
  while (!deadline.expired()) {
    // The hold ends a little before the deadline, so that the answer beats the read timeout.
    const Duration hold = std::clamp(deadline.remaining() - kLongPollMargin, Duration::zero(), options_.assignmentPoll);
    const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(hold).count();
    const TimePoint sent = SystemClock::instance().now();
    auto reply = send(Method::kGet, base + std::to_string(ms), "", deadline, hold + kLongPollGrace, what);
    if (!reply.isOk() && (reply.status().code() == StatusCode::kTimeout || (answered && deadline.expired()))) break;
    DDP_ASSIGN_OR_RETURN(Reply r, std::move(reply));
    answered = true;
    if (r.status == 200) {
      auto a = decodeAssignment(r.body);
      if (!a.isOk()) return internalError("controller at " + options_.url + ": " + a.status().message());
      return a;
    }
    if (r.status == 409) {
      return outOfRange(std::string(kJobFinishedPrefix) + errorField(r.body, "state") + " (job " + options_.job +
                        ": " + serverError(r.body) + ")");
    }
    if (r.status != 204) return replyError(r, what);
    // The round is still open. An answer well before the hold means the server did not hold
    // the request: pause a little instead of spinning.
    const bool held = hold > Duration::zero() && SystemClock::instance().now() - sent >= hold / 2;
    if (!held && !deadline.expired()) {
      std::this_thread::sleep_for(std::min(options_.initialBackoff, deadline.remaining()));
    }
  }
  return timeoutError("no assignment from the controller at " + options_.url + " within " +
                      seconds(SystemClock::instance().now() - start) + " (the rendezvous round of job " +
                      options_.job + " did not close)");
}

Result<HeartbeatAnswer> ControllerClient::heartbeat(int64_t generation, const Heartbeat& report,
                                                    Deadline deadline) const {
  const std::string what = "heartbeat of worker " + options_.workerId;
  const std::string path = jobPath() + "/generations/" + std::to_string(generation) + "/heartbeat";
  Heartbeat withShard = report;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!withShard.lastShard) withShard.lastShard = lastShard_;
  }
  DDP_ASSIGN_OR_RETURN(Reply r, send(Method::kPost, path, encodeHeartbeat(withShard), deadline, deadline.remaining(), what));
  if (r.status != 200) return replyError(r, what);
  auto a = decodeHeartbeatAnswer(r.body);
  if (!a.isOk()) return internalError("controller at " + options_.url + ": " + a.status().message());
  return a;
}

comm::HttpStoreClientOptions ControllerClient::storeOptions(int64_t generation) const {
  comm::HttpStoreClientOptions o;
  o.basePath = jobPath() + "/generations/" + std::to_string(generation) + "/store";
  o.bearerToken = options_.token;
  return o;
}

// The checkpoint routes (docs/API.md, "Checkpoint commit"); JSON codecs in
// common/protocol/worker_codec.cc.
class ControllerCheckpointChannel final : public CheckpointChannel {
 public:
  ControllerCheckpointChannel(const ControllerClient& client, int64_t generation)
      : client_(client),
        generation_(generation),
        base_(client.jobPath() + "/generations/" + std::to_string(generation) + "/checkpoints/") {}

  Result<CommitVerdictWire> reportShard(int64_t step, const ShardOutcome& o, Deadline deadline) override {
    const std::string what = "checkpoint report of worker " + client_.options_.workerId + " for step " + std::to_string(step);
    DDP_ASSIGN_OR_RETURN(ControllerClient::Reply r,
                         client_.send(ControllerClient::Method::kPost, base_ + std::to_string(step) + "/shards",
                                      encodeShardOutcome(o), deadline, deadline.remaining(), what));
    if (r.status == 200) {
      std::lock_guard<std::mutex> lock(client_.mu_);
      client_.lastShard_ = LastShardReport{generation_, step, o};
    }
    return verdict(r, what);
  }

  Result<CommitVerdictWire> decision(int64_t step, Deadline deadline) override {
    const std::string what = "checkpoint decision for step " + std::to_string(step);
    DDP_ASSIGN_OR_RETURN(ControllerClient::Reply r, client_.send(ControllerClient::Method::kGet, base_ + std::to_string(step),
                                                                 "", deadline, deadline.remaining(), what));
    return verdict(r, what);
  }

  Status reportCommit(int64_t step, const CommitOutcome& o, Deadline deadline) override {
    const std::string what = "checkpoint commit report for step " + std::to_string(step);
    DDP_ASSIGN_OR_RETURN(ControllerClient::Reply r,
                         client_.send(ControllerClient::Method::kPost, base_ + std::to_string(step) + "/commit",
                                      encodeCommitOutcome(o), deadline, deadline.remaining(), what));
    if (r.status != 200) return client_.replyError(r, what);
    return Status::ok();
  }

 private:
  Result<CommitVerdictWire> verdict(const ControllerClient::Reply& r, const std::string& what) const {
    if (r.status != 200) return client_.replyError(r, what);
    auto v = decodeCommitVerdict(r.body);
    if (!v.isOk()) return internalError("controller at " + client_.url() + ": " + v.status().message());
    return v;
  }

  const ControllerClient& client_;
  const int64_t generation_;
  const std::string base_;
};

std::unique_ptr<CheckpointChannel> ControllerClient::checkpointChannel(int64_t generation) const {
  return std::make_unique<ControllerCheckpointChannel>(*this, generation);
}

bool isFenced(const Status& st) {
  return st.code() == StatusCode::kAborted && st.message().find(kFencedPrefix) != std::string::npos;
}

std::optional<std::string> jobFinished(const Status& st) {
  const std::string prefix = kJobFinishedPrefix;
  const size_t at = st.message().find(prefix);
  if (st.code() != StatusCode::kOutOfRange || at == std::string::npos) return std::nullopt;
  const std::string rest = st.message().substr(at + prefix.size());
  return rest.substr(0, rest.find(' '));
}


}  // namespace ddp::runtime
