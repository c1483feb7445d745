#include "controller/api/api_server.h"

#include <unistd.h>

#include <charconv>

#include <nlohmann/json.hpp>

#include "common/http/bearer_auth.h"
#include "common/jobspec/job_spec.h"
#include "common/log.h"
#include "common/protocol/controller_codec.h"
#include "common/protocol/heartbeat_codec.h"
#include "common/protocol/worker_codec.h"
#include "common/secret.h"
#include "common/utf8.h"
#include "controller/api/flight_records_json.h"
#include "controller/api/job_json.h"

namespace ddp::controller {
namespace {

using nlohmann::json;
using http::Request;
using http::Responder;
using http::Response;
using Res = std::shared_ptr<Responder>;

void sendJson(Responder& r, int status, std::string body) {
  Response res;
  res.status = status;
  res.body = std::move(body);
  r.reply(std::move(res));
}

void sendError(Responder& r, int status, const std::string& message) { r.reply(Response::jsonError(status, message)); }

// Maps a Status from the job manager to the API's status codes.
void sendStatus(Responder& r, const Status& st) {
  int code = 500;
  switch (st.code()) {
    case StatusCode::kInvalidArgument: code = 400; break;
    case StatusCode::kNotFound: code = 404; break;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition: code = 409; break;
    case StatusCode::kUnavailable: code = 503; break;
    case StatusCode::kTimeout: code = 504; break;
    case StatusCode::kPermissionDenied: code = 403; break;
    case StatusCode::kResourceExhausted: code = 507; break;
    default: break;
  }
  sendError(r, code, st.message());
}

// The worker's incarnation nonce (Note [Worker incarnations]); "" when the call has none.
std::string incarnationOf(const Request& req) { return req.header(protocol::kIncarnationHeader); }

bool parseInt64(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string mediaType(const Request& req) {
  std::string ct = req.header("Content-Type");
  if (auto semi = ct.find(';'); semi != std::string::npos) ct.resize(semi);
  while (!ct.empty() && ct.back() == ' ') ct.pop_back();
  for (auto& c : ct) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ct;
}

bool isStoreRoute(std::string_view path) { return path.find("/store/") != std::string_view::npos; }

}  // namespace

bool isWorkerRoute(const Request& req) {
  // /v1/jobs/{name}/workers[/...] and /v1/jobs/{name}/generations/...: the fourth segment.
  std::string_view path = req.path;
  constexpr std::string_view kJobs = "/v1/jobs/";
  if (path.rfind(kJobs, 0) != 0) return false;
  path.remove_prefix(kJobs.size());
  const auto slash = path.find('/');
  if (slash == std::string_view::npos) return false;
  path.remove_prefix(slash + 1);
  const std::string_view segment = path.substr(0, path.find('/'));
  return segment == "workers" || segment == "generations";
}


ApiServer::ApiServer(ApiOptions options, std::string controllerToken, JobManager& jobs, Launcher& launcher,
                     comm::StoreService& store)
    : options_(options), token_(std::move(controllerToken)), jobs_(jobs), launcher_(launcher), store_(store) {
  taskThread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      tasksCv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  });
}

ApiServer::~ApiServer() { stop(); }

void ApiServer::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.exchange(true)) return;
  }
  tasksCv_.notify_all();
  if (taskThread_.joinable()) taskThread_.join();
  std::list<Follower> followers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    followers.swap(followers_);
  }
  for (auto& f : followers) f.thread.join();
}

void ApiServer::runTask(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  tasksCv_.notify_all();
}

size_t ApiServer::bodyLimit(const Request& head) const {
  if (head.method == "POST" && head.path == "/v1/jobs") return options_.maxJobBytes;
  if (isStoreRoute(head.path)) return store_.bodyLimit();
  return options_.maxSmallBodyBytes;
}

ApiServer::Handler ApiServer::user(Handler h) {
  return http::withBearerAuth(http::fixedBearerToken(token_), std::move(h));
}

ApiServer::Handler ApiServer::worker(Handler h) {
  http::BearerAuth auth;
  auth.accepts = [this](const Request& req, const std::string& presented) {
    return jobs_.workerTokenMatches(req.params.at("name"), presented);
  };
  auth.refusal = [](const Request& req) { return "invalid token for job " + req.params.at("name"); };
  return http::withBearerAuth(std::move(auth), std::move(h));
}

void ApiServer::install(http::Router& router) {
  auto bind = [this](void (ApiServer::*m)(Request&, Res)) {
    return [this, m](Request& req, Res res) { (this->*m)(req, std::move(res)); };
  };
  installWorkerRoutes(router);
  router.add("POST", "/v1/jobs", user(bind(&ApiServer::submit)));
  router.add("GET", "/v1/jobs", user(bind(&ApiServer::list)));
  router.add("GET", "/v1/jobs/{name}", user(bind(&ApiServer::getJob)));
  router.add("DELETE", "/v1/jobs/{name}", user(bind(&ApiServer::remove)));
  router.add("POST", "/v1/jobs/{name}/cancel", user(bind(&ApiServer::cancel)));
  router.add("POST", "/v1/jobs/{name}/scale", user(bind(&ApiServer::scale)));
  router.add("POST", "/v1/jobs/{name}/suspend", user(bind(&ApiServer::suspend)));
  router.add("POST", "/v1/jobs/{name}/resume", user(bind(&ApiServer::resume)));
  router.add("GET", "/v1/jobs/{name}/logs", user(bind(&ApiServer::logs)));
  router.add("GET", "/v1/jobs/{name}/events", user(bind(&ApiServer::events)));
  router.add("GET", "/v1/jobs/{name}/checkpoints", user(bind(&ApiServer::checkpoints)));
  router.add("POST", "/v1/jobs/{name}/checkpoints", user(bind(&ApiServer::requestCheckpoint)));
  router.add("GET", "/v1/jobs/{name}/flightrecords", user(bind(&ApiServer::flightRecords)));
}

void ApiServer::installWorkerRoutes(http::Router& router) {
  auto bind = [this](void (ApiServer::*m)(Request&, Res)) {
    return [this, m](Request& req, Res res) { (this->*m)(req, std::move(res)); };
  };
  router.add("GET", "/healthz", [](Request&, Res res) { sendJson(*res, 200, R"({"status":"ok"})"); });
  router.add("GET", "/readyz", [this](Request&, Res res) {
    Status st = launcher_.ready();
    // A leader whose job manager is still loading its table (Note [Standby replicas]) is not
    // ready either: a worker's request would find no job. A standby is ready (it serves reads;
    // the Service's leader label keeps users and workers off it: Note [Leader label]).
    const bool standby = options_.standby && options_.standby();
    if (st.isOk() && !standby) st = jobs_.changesAllowed();
    if (!st.isOk()) return sendJson(*res, 503, json{{"status", "not ready"}, {"reason", st.message()}}.dump(-1, ' ', false, json::error_handler_t::replace));
    sendJson(*res, 200, R"({"status":"ready"})");
  });
  router.add("POST", "/v1/jobs/{name}/workers", worker(bind(&ApiServer::registerWorker)));
  router.add("GET", "/v1/jobs/{name}/workers/{id}/assignment", worker(bind(&ApiServer::assignment)));
  router.add("POST", "/v1/jobs/{name}/generations/{g}/heartbeat", worker(bind(&ApiServer::heartbeat)));
  router.add("POST", "/v1/jobs/{name}/generations/{g}/checkpoints/{step}/shards", worker(bind(&ApiServer::checkpointShard)));
  router.add("GET", "/v1/jobs/{name}/generations/{g}/checkpoints/{step}", worker(bind(&ApiServer::checkpointDecision)));
  router.add("POST", "/v1/jobs/{name}/generations/{g}/checkpoints/{step}/commit", worker(bind(&ApiServer::checkpointCommit)));
  for (const char* m : {"GET", "PUT", "POST", "DELETE"}) {
    router.add(m, "/v1/jobs/{name}/generations/{g}/store/{op}", worker(bind(&ApiServer::storeOp)));
  }
}

void ApiServer::submit(Request& req, Res res) {
  const std::string type = mediaType(req);
  const bool yaml = type == "application/yaml" || type == "application/x-yaml" || type == "text/yaml";
  if (!yaml && type != "application/json") {
    return sendError(*res, 415, "Content-Type '" + req.header("Content-Type") +
                                    "' is not accepted: send the DDPJob document as application/yaml or application/json");
  }
  std::vector<SpecError> errors;
  auto spec = parseJobSpec(req.body, &errors);
  if (!spec.isOk()) {
    const std::string summary = "invalid DDPJob: " + std::to_string(errors.size()) + " error(s)";
    return sendJson(*res, 400, specErrorsJson(summary, errors));
  }
  auto rec = jobs_.submit(*spec);
  if (!rec.isOk()) {
    if (rec.status().code() == StatusCode::kInvalidArgument) {
      SpecError e;
      const std::string& m = rec.status().message();
      auto colon = m.find(": ");
      e.path = colon == std::string::npos ? "" : m.substr(0, colon);
      e.message = colon == std::string::npos ? m : m.substr(colon + 2);
      return sendJson(*res, 400, specErrorsJson("invalid DDPJob: 1 error(s)", {e}));
    }
    return sendStatus(*res, rec.status());
  }
  sendJson(*res, 201, jobJson(*rec));
}

void ApiServer::list(Request& req, Res res) {
  std::optional<JobPhase> phase;
  if (auto p = req.queryValue("phase")) {
    JobPhase parsed;
    if (!parseJobPhase(*p, &parsed)) {
      return sendError(*res, 400, "phase '" + *p + "' is not one of Pending, Running, Restarting, Succeeded, Failed, Cancelled");
    }
    phase = parsed;
  }
  auto all = jobs_.list();
  if (!all.isOk()) return sendStatus(*res, all.status());
  std::vector<JobRecord> out;
  for (auto& r : *all) {
    if (!phase || r.phase == *phase) out.push_back(std::move(r));
  }
  sendJson(*res, 200, jobListJson(out));
}

void ApiServer::getJob(Request& req, Res res) {
  auto rec = jobs_.get(req.params["name"]);
  if (!rec.isOk()) return sendStatus(*res, rec.status());
  sendJson(*res, 200, jobJson(*rec));
}

void ApiServer::cancel(Request& req, Res res) {
  auto rec = jobs_.cancel(req.params["name"]);
  if (!rec.isOk()) return sendStatus(*res, rec.status());
  sendJson(*res, 200, jobJson(*rec));
}

// POST /v1/jobs/{name}/suspend and /resume (Note [Suspended jobs] in
// controller/jobs/lifecycle/suspension.h).
void ApiServer::suspend(Request& req, Res res) {
  auto rec = jobs_.suspend(req.params["name"]);
  if (!rec.isOk()) return sendStatus(*res, rec.status());
  sendJson(*res, 200, jobJson(*rec));
}

void ApiServer::resume(Request& req, Res res) {
  auto rec = jobs_.resume(req.params["name"]);
  if (!rec.isOk()) return sendStatus(*res, rec.status());
  sendJson(*res, 200, jobJson(*rec));
}

// POST /v1/jobs/{name}/scale {"workers": N} (Note [Elastic membership]).
void ApiServer::scale(Request& req, Res res) {
  json body;
  try {
    body = json::parse(req.body);
  } catch (const json::exception&) {
    return sendError(*res, 400, "the body must be a JSON object {\"workers\": N}");
  }
  if (!body.is_object() || !body.contains("workers")) {
    return sendError(*res, 400, "workers: required (the body is {\"workers\": N})");
  }
  const json& n = body["workers"];
  if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > kMaxWorkersPerJob) {
    return sendError(*res, 400, "workers: must be an integer from 1 to " + std::to_string(kMaxWorkersPerJob) +
                                    ", got " + n.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  auto rec = jobs_.scale(req.params["name"], static_cast<int>(n.get<int64_t>()), "workers");
  if (!rec.isOk()) return sendStatus(*res, rec.status());
  sendJson(*res, 200, jobJson(*rec));
}

void ApiServer::remove(Request& req, Res res) {
  const std::string name = req.params["name"];
  runTask([this, name, res] {
    Status st = jobs_.remove(name, Deadline::after(options_.deleteTimeout));
    if (!st.isOk()) return sendStatus(*res, st);
    sendJson(*res, 200, json{{"deleted", name}}.dump(-1, ' ', false, json::error_handler_t::replace));
  });
}

void ApiServer::events(Request& req, Res res) {
  auto ev = jobs_.events(req.params["name"]);
  if (!ev.isOk()) return sendStatus(*res, ev.status());
  sendJson(*res, 200, eventsJson(*ev));
}

void ApiServer::requestCheckpoint(Request& req, Res res) {
  auto step = jobs_.requestCheckpoint(req.params["name"]);
  if (!step.isOk()) return sendStatus(*res, step.status());
  sendJson(*res, 202, json{{"requested", true}, {"afterStep", *step}}.dump(-1, ' ', false, json::error_handler_t::replace));
}

void ApiServer::checkpoints(Request& req, Res res) {
  auto cps = jobs_.checkpoints(req.params["name"]);
  if (!cps.isOk()) return sendStatus(*res, cps.status());
  sendJson(*res, 200, checkpointsJson(*cps));
}

void ApiServer::flightRecords(Request& req, Res res) {
  auto records = jobs_.flightRecords(req.params["name"]);
  if (!records.isOk()) return sendStatus(*res, records.status());
  sendJson(*res, 200, flightRecordsJson(*records));
}

void ApiServer::logs(Request& req, Res res) {
  const std::string name = req.params["name"];
  auto rec = jobs_.get(name);
  if (!rec.isOk()) return sendStatus(*res, rec.status());
  LogOptions o;
  std::string workerId;
  if (auto r = req.queryValue("rank")) {
    int64_t rank = -1;
    if (!parseInt64(*r, &rank) || rank < 0) return sendError(*res, 400, "rank '" + *r + "' is not a rank");
    for (const auto& w : rec->workers) {
      if (w.rank == rank) workerId = w.id;
    }
    if (workerId.empty()) workerId = workerIdFor(name, static_cast<int>(rank));  // before rendezvous: the slot
  }
  if (auto t = req.queryValue("tail")) {
    if (!parseInt64(*t, &o.tailLines) || o.tailLines < 0) return sendError(*res, 400, "tail '" + *t + "' is not a line count");
  }
  auto f = req.queryValue("follow");
  o.follow = f && (*f == "1" || *f == "true");
  auto stream = launcher_.openLog(name, workerId, o);
  if (!stream.isOk()) return sendStatus(*res, stream.status());
  if (!o.follow) {
    std::string text;
    const Deadline deadline = Deadline::after(options_.logReadTimeout);
    while (!(*stream)->done() && !deadline.expired()) {
      auto chunk = (*stream)->read(deadline);
      if (!chunk.isOk()) break;
      text += *chunk;
    }
    res->reply(Response::text(200, std::move(text)));
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return sendError(*res, 503, "the controller is stopping");
  if (activeFollowers_ >= options_.maxFollowers) {
    return sendError(*res, 429, "too many followed logs (" + std::to_string(options_.maxFollowers) + "); try again later");
  }
  reapFollowers();
  ++activeFollowers_;
  Follower& follower = followers_.emplace_back();
  follower.thread = std::thread([this, s = std::move(*stream), name, res, done = follower.done]() mutable {
    follow(std::move(s), name, res);
    done->store(true);
  });
}

void ApiServer::reapFollowers() {
  for (auto it = followers_.begin(); it != followers_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = followers_.erase(it);
    } else {
      ++it;
    }
  }
}

void ApiServer::follow(std::unique_ptr<LogStream> stream, std::string job, Res res) {
  if (res->startStream(200, "text/plain; charset=utf-8")) {
    // Until the client goes, the controller stops, or the job ended and its log was read out.
    while (!stopping_ && !res->closed()) {
      auto chunk = stream->read(Deadline::after(options_.followPoll));
      if (!chunk.isOk() || stream->done()) break;
      if (chunk->empty()) {
        if (jobs_.isFinished(job)) {
          auto last = stream->read(Deadline::after(options_.followLastRead));
          if (last.isOk() && !last->empty()) res->write(*last);
          break;
        }
        continue;
      }
      if (!res->write(*chunk)) break;
    }
    res->finish();
  }
  std::lock_guard<std::mutex> lock(mu_);
  --activeFollowers_;
}

void ApiServer::registerWorker(Request& req, Res res) {
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return sendError(*res, 400, "the body is not a JSON object");
  RegisterRequest r;
  r.workerId = body.value("workerId", "");
  r.host = body.value("host", "");
  r.advertiseAddress = body.value("advertiseAddress", r.host);
  r.pid = body.value("pid", int64_t{0});
  if (auto it = body.find("leftGeneration"); it != body.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      return sendError(*res, 400, "leftGeneration must be an integer >= 0");
    }
    r.leftGeneration = it->get<int64_t>();
  }
  if (auto it = body.find("lastStep"); it != body.end()) {
    if (!it->is_number_integer()) return sendError(*res, 400, "lastStep must be an integer");
    r.lastStep = it->get<int64_t>();
  }
  if (auto it = body.find("reason"); it != body.end() && it->is_string()) r.reason = std::string(utf8Prefix(it->get<std::string>(), 4096));
  r.incarnation = incarnationOf(req);
  Fenced fenced;
  std::string incarnation;
  auto g = jobs_.registerWorker(req.params["name"], r, &fenced, &incarnation);
  if (!g.isOk() && g.status().code() == StatusCode::kAborted) {
    return sendJson(*res, 410, json{{"error", "stale generation"}, {"generation", fenced.current}}.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  if (!g.isOk()) return sendStatus(*res, g.status());
  sendJson(*res, 200, json{{"workerId", r.workerId}, {"generation", *g}, {"incarnation", incarnation}}.dump(-1, ' ', false, json::error_handler_t::replace));
}

void ApiServer::assignment(Request& req, Res res) {
  int64_t waitMs = 0;
  if (auto w = req.queryValue("wait_ms")) {
    if (!parseInt64(*w, &waitMs) || waitMs < 0) return sendError(*res, 400, "wait_ms '" + *w + "' must be an integer >= 0");
  }
  const auto peers = req.queryValue("peers");
  const bool withPeers = peers && (*peers == "1" || *peers == "true");
  int64_t after = 0;
  if (auto a = req.queryValue("after")) {
    if (!parseInt64(*a, &after) || after < 0) return sendError(*res, 400, "after '" + *a + "' must be an integer >= 0");
  }
  jobs_.awaitAssignment(req.params["name"], req.params["id"], std::chrono::milliseconds(waitMs), withPeers, after,
                        std::move(res), incarnationOf(req));
}

void ApiServer::storeOp(Request& req, Res res) {
  int64_t g = 0;
  if (!parseInt64(req.params["g"], &g)) return sendError(*res, 400, "generation '" + req.params["g"] + "' is not an integer");
  Fenced fenced;
  auto space = jobs_.keySpace(req.params["name"], g, &fenced);
  if (!space.isOk()) {
    if (space.status().code() == StatusCode::kAborted) {
      return sendJson(*res, 410, json{{"error", "stale generation"}, {"generation", fenced.current}}.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    return sendStatus(*res, space.status());
  }
  store_.handle(*space, req.params["op"], req, std::move(res));
}

void ApiServer::heartbeat(Request& req, Res res) {
  int64_t g = 0;
  if (!parseInt64(req.params["g"], &g)) return sendError(*res, 400, "generation '" + req.params["g"] + "' is not an integer");
  auto hb = protocol::decodeHeartbeat(req.body);
  if (!hb.isOk()) return sendStatus(*res, hb.status());
  hb->incarnation = incarnationOf(req);
  Fenced fenced;
  auto cmd = jobs_.heartbeat(req.params["name"], g, *hb, &fenced);
  if (!cmd.isOk()) {
    if (cmd.status().code() == StatusCode::kAborted) {
      return sendJson(*res, 410, json{{"error", "stale generation"}, {"generation", fenced.current}}.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    return sendStatus(*res, cmd.status());
  }
  sendJson(*res, 200, protocol::encodeHeartbeatAnswer({*cmd, g}));
}

namespace {

// The generation and step of a checkpoint route, or false after answering 400.
bool checkpointParams(Request& req, Responder& res, int64_t* g, int64_t* step) {
  if (!parseInt64(req.params["g"], g)) {
    sendError(res, 400, "generation '" + req.params["g"] + "' is not an integer");
    return false;
  }
  if (!parseInt64(req.params["step"], step) || *step < 0) {
    sendError(res, 400, "step '" + req.params["step"] + "' is not a non-negative integer");
    return false;
  }
  return true;
}

// The verdict in the message the worker decodes (shards by rank: a commit holds every rank's).
std::string verdictJson(const CheckpointVerdict& v) {
  protocol::CommitVerdictWire wire;
  wire.decision = v.decision == CommitDecision::kCommit    ? protocol::CommitDecisionKind::kCommit
                  : v.decision == CommitDecision::kAbandon ? protocol::CommitDecisionKind::kAbandon
                                                           : protocol::CommitDecisionKind::kPending;
  wire.reason = v.reason;
  for (const ShardReport& s : v.shards) wire.shards.push_back({s.bytes, s.crc});
  return protocol::encodeCommitVerdict(wire);
}

// Rank 0's phase-2 report as the job manager takes it.
CommitReport commitReportOf(int64_t step, protocol::CommitOutcome o) {
  CommitReport c;
  c.step = step;
  c.ok = o.ok;
  c.error = std::move(o.error);
  c.bytes = o.bytes;
  c.path = std::move(o.path);
  c.seconds = o.seconds;
  c.onDisk = std::move(o.onDisk);
  for (protocol::CommittedCheckpoint& d : o.onDiskDetail) {
    CheckpointRecord r;
    r.step = d.step;
    r.bytes = d.bytes;
    r.worldSize = d.worldSize;
    r.timeMs = d.createdUnixMs;
    r.path = std::move(d.path);
    c.onDiskRecords.push_back(std::move(r));
  }
  return c;
}

}  // namespace

// Note [Two-phase checkpoint commit]: phase 1, one rank's shard.
void ApiServer::checkpointShard(Request& req, Res res) {
  int64_t g = 0, step = 0;
  if (!checkpointParams(req, *res, &g, &step)) return;
  auto r = protocol::decodeShardReport(req.body);
  if (!r.isOk()) return sendStatus(*res, r.status());
  Fenced fenced;
  auto v = jobs_.reportShard(req.params["name"], g, step, *r, &fenced);
  if (!v.isOk()) {
    if (v.status().code() == StatusCode::kAborted) {
      return sendJson(*res, 410, json{{"error", "stale generation"}, {"generation", fenced.current}}.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    return sendStatus(*res, v.status());
  }
  sendJson(*res, 200, verdictJson(*v));
}

// Rank 0 asks whether every rank reported (commit), or the checkpoint is abandoned.
void ApiServer::checkpointDecision(Request& req, Res res) {
  int64_t g = 0, step = 0;
  if (!checkpointParams(req, *res, &g, &step)) return;
  auto v = jobs_.checkpointDecision(req.params["name"], g, step);
  if (!v.isOk()) return sendStatus(*res, v.status());
  sendJson(*res, 200, verdictJson(*v));
}

// Phase 2 done (or failed) on rank 0: the MANIFEST and the complete checkpoints on disk.
void ApiServer::checkpointCommit(Request& req, Res res) {
  int64_t g = 0, step = 0;
  if (!checkpointParams(req, *res, &g, &step)) return;
  auto outcome = protocol::decodeCommitOutcome(req.body);
  if (!outcome.isOk()) return sendStatus(*res, outcome.status());
  const CommitReport c = commitReportOf(step, std::move(*outcome));
  Status st = jobs_.reportCommit(req.params["name"], g, c);
  if (!st.isOk()) return sendStatus(*res, st);
  sendJson(*res, 200, R"({"recorded":true})");
}

}  // namespace ddp::controller
