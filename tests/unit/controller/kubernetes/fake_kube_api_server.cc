// FakeKubeApiServer (fake_kube_api_server.h): the in-memory store, the REST handlers, watches.
#include "tests/unit/controller/kubernetes/fake_kube_api_server.h"

#include "tests/unit/controller/kubernetes/fake_admission.h"

#include <algorithm>
#include <cstdio>
#include <condition_variable>
#include <set>
#include <thread>

namespace ddp::controller::kube::testing {
namespace {

using nlohmann::json;

struct Target {
  std::string resource;  // "pods" (core) or "ddp.dev/v1/ddpjobs"
  std::string apiVersion;
  std::string ns;        // "" for an all-namespaces collection
  std::string name;      // "" for a collection
  std::string sub;       // "", "status", "log"
  bool custom = false;   // a custom resource (not built in)
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

std::optional<Target> parseTarget(const std::string& path) {
  std::vector<std::string> p = split(path, '/');  // "", "api", ...
  if (p.size() < 3 || !p[0].empty()) return std::nullopt;
  Target t;
  size_t i;
  if (p[1] == "api" && p[2] == "v1") {
    t.apiVersion = "v1";
    i = 3;
  } else if (p[1] == "apis" && p.size() >= 5) {
    t.apiVersion = p[2] + "/" + p[3];
    t.custom = p[2] == "ddp.dev";
    i = 4;
  } else {
    return std::nullopt;
  }
  if (i < p.size() && p[i] == "namespaces" && i + 2 < p.size()) {
    t.ns = p[i + 1];
    i += 2;
  }
  if (i >= p.size() || p[i].empty()) return std::nullopt;
  t.resource = t.apiVersion == "v1" ? p[i] : t.apiVersion + "/" + p[i];
  if (i + 1 < p.size()) t.name = p[i + 1];
  if (i + 2 < p.size()) t.sub = p[i + 2];
  if (i + 3 < p.size() || (!t.name.empty() && t.ns.empty())) return std::nullopt;
  return t;
}

std::string kindOf(const std::string& resource) {
  static const std::map<std::string, std::string> kKinds = {
      {"pods", "Pod"}, {"services", "Service"}, {"namespaces", "Namespace"}, {"secrets", "Secret"}, {"events", "Event"},
      {"coordination.k8s.io/v1/leases", "Lease"}, {"ddp.dev/v1/ddpjobs", "DDPJob"},
      // The gang schedulers' custom resources (scheduler-plugins' coscheduling, Volcano).
      {"scheduling.x-k8s.io/v1alpha1/podgroups", "PodGroup"}, {"scheduling.volcano.sh/v1beta1/podgroups", "PodGroup"}};
  auto it = kKinds.find(resource);
  return it == kKinds.end() ? "" : it->second;
}

http::Response statusResponse(int code, const std::string& reason, const std::string& message) {
  http::Response r;
  r.status = code;
  r.body = json{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()},
                {"status", "Failure"}, {"message", message}, {"reason", reason}, {"code", code}}
               .dump();
  return r;
}

http::Response jsonResponse(int code, const json& body) {
  http::Response r;
  r.status = code;
  r.body = body.dump();
  return r;
}

std::map<std::string, std::string> parseSelector(const std::string& s) {
  std::map<std::string, std::string> out;
  if (s.empty()) return out;
  for (const std::string& term : split(s, ',')) {
    size_t eq = term.find('=');
    if (eq == std::string::npos) continue;
    std::string value = term.substr(eq + 1);
    if (!value.empty() && value[0] == '=') value.erase(0, 1);
    out[term.substr(0, eq)] = value;
  }
  return out;
}

bool matches(const json& obj, const std::string& ns, const std::map<std::string, std::string>& selector) {
  if (!ns.empty() && obj["metadata"].value("namespace", "") != ns) return false;
  for (const auto& [k, v] : selector) {
    const json& labels = obj["metadata"].contains("labels") ? obj["metadata"]["labels"] : json::object();
    if (!labels.contains(k) || labels[k] != v) return false;
  }
  return true;
}

}  // namespace

struct Watcher {
  std::string resource, ns;
  std::map<std::string, std::string> selector;
  bool bookmarks = false;
  std::shared_ptr<http::Responder> out;
  TimePoint end;
  bool ended = false;
};

struct HistoryEvent {
  int64_t rv;
  std::string resource, type;
  json object;
};

struct FakeKubeApiServer::State {
  mutable std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::map<std::string, json>> store;  // resource -> "ns/name" -> object
  int64_t rv = 100;
  int64_t compactedAt = 0;                                   // history holds events after this
  std::vector<HistoryEvent> history;
  std::vector<std::shared_ptr<Watcher>> watchers;
  std::string token;
  std::optional<FakeRbac> rbac;
  std::vector<std::string> refused;  // requests refused with 403
  std::vector<std::string> requests;
  std::map<std::string, std::string> logs;
  std::map<std::string, std::vector<std::string>> logStamps;  // one per line of logs[key]
  int64_t logLines = 0;                                      // lines stamped so far

  // Stamps the lines of `text` (appended to logs[key]) with the next fake instants.
  void stampLog(const std::string& key, const std::string& text) {
    for (size_t start = 0; start < text.size();) {
      const size_t nl = text.find('\n', start);
      start = nl == std::string::npos ? text.size() : nl + 1;
      const int64_t ms = ++logLines, secs = ms / 1000;
      char buf[64];
      std::snprintf(buf, sizeof(buf), "2025-01-01T%02d:%02d:%02d.%09dZ", static_cast<int>(secs / 3600 % 24),
                    static_cast<int>(secs / 60 % 60), static_cast<int>(secs % 60), static_cast<int>(ms % 1000 * 1000000));
      logStamps[key].push_back(buf);
    }
  }
  // The log with each line stamped, from `since` on ("" : all).
  std::string stampedLog(const std::string& key, const std::string& since) {
    const std::string& text = logs[key];
    const std::vector<std::string>& stamps = logStamps[key];
    std::string out;
    size_t line = 0;
    for (size_t start = 0; start < text.size(); ++line) {
      const size_t nl = text.find('\n', start);
      const size_t end = nl == std::string::npos ? text.size() : nl + 1;
      const std::string stamp = line < stamps.size() ? stamps[line] : "";
      if (since.empty() || stamp >= since) out += stamp + " " + text.substr(start, end - start);
      start = end;
    }
    return out;
  }
  int64_t uids = 0;
  bool stopping = false;
  bool watchesUnavailable = false;
  std::set<std::string> interfere;  // "resource ns/name": bump before the next write
  std::map<std::string, Duration> createDelay;  // resource -> delay of a create's reply
  bool kueueGates = false;  // enableKueueAdmission(): Kueue's webhook gates queued pods
  std::thread reaper;  // ends watches past their timeoutSeconds

  // Every method below: mu held.
  void emit(const std::string& type, const std::string& resource, const json& obj) {
    history.push_back({rv, resource, type, obj});
    const std::string line = json{{"type", type}, {"object", obj}}.dump() + "\n";
    for (const auto& w : watchers) {
      if (!w->ended && w->resource == resource && matches(obj, w->ns, w->selector)) w->out->write(line);
    }
  }
  json stamp(json obj, const Target& t) {
    obj["apiVersion"] = t.apiVersion;
    obj["kind"] = kindOf(t.resource);
    obj["metadata"]["resourceVersion"] = std::to_string(++rv);
    return obj;
  }
  void removeTree(const std::string& resource, const std::string& key) {
    auto it = store[resource].find(key);
    if (it == store[resource].end()) return;
    json obj = it->second;
    store[resource].erase(it);
    obj["metadata"]["resourceVersion"] = std::to_string(++rv);
    emit("DELETED", resource, obj);
    const std::string uid = obj["metadata"].value("uid", "");
    for (auto& [res, objects] : store) {  // the garbage collector, at once
      std::vector<std::string> children;
      for (const auto& [k, o] : objects) {
        for (const json& ref : o["metadata"].value("ownerReferences", json::array())) {
          if (ref.value("uid", "") == uid) children.push_back(k);
        }
      }
      for (const std::string& k : children) removeTree(res, k);
    }
  }

  // The Namespace object `ns` when a test stored one (put("namespaces", "", ...)), else null.
  const json* namespaceOf(const std::string& ns) {
    auto it = store["namespaces"].find("/" + ns);
    return it == store["namespaces"].end() ? nullptr : &it->second;
  }
  // What Kueue's pod webhook does to a pod labelled with a queue: the admission gate and the
  // managed label; the API server then reports it Pending, PodScheduled False SchedulingGated.
  static void gateForKueue(json* pod) {
    json& meta = (*pod)["metadata"];
    if (!meta.value("labels", json::object()).contains("kueue.x-k8s.io/queue-name")) return;
    meta["labels"]["kueue.x-k8s.io/managed"] = "true";
    (*pod)["spec"]["schedulingGates"] = json::array({{{"name", "kueue.x-k8s.io/admission"}}});
    (*pod)["status"] = {{"phase", "Pending"},
                        {"conditions", json::array({{{"type", "PodScheduled"}, {"status", "False"},
                                                     {"reason", "SchedulingGated"},
                                                     {"message", "Scheduling is blocked due to non-empty scheduling gates"}}})}};
  }
  http::Response create(const Target& t, json body);
  http::Response update(const Target& t, json body, bool patch, const std::string& contentType);
  // The scale subresource of a custom resource (the DDPJob CRD's: spec.replicas is
  // .spec.workers.count, status.replicas .status.readyWorkers): GET, PUT or merge PATCH.
  http::Response scale(const Target& t, const http::Request& req);
  void watch(const Target& t, const http::Request& req, std::shared_ptr<http::Responder> out);
  void handle(http::Request& req, std::shared_ptr<http::Responder> out);
};

http::Response FakeKubeApiServer::State::create(const Target& t, json body) {
  if (!body.is_object() || !body.contains("metadata") || !body["metadata"].is_object()) {
    return statusResponse(400, "BadRequest", "the object has no metadata");
  }
  const std::string name = body["metadata"].value("name", "");
  if (auto refused = admit(t.resource, kindOf(t.resource), body, namespaceOf(t.ns))) {  // fake_admission.h
    return statusResponse(refused->code, refused->reason, refused->message);
  }
  const std::string key = t.ns + "/" + name;
  if (store[t.resource].count(key)) {
    return statusResponse(409, "AlreadyExists", t.resource + " \"" + name + "\" already exists");
  }
  body["metadata"]["namespace"] = t.ns;
  body["metadata"]["uid"] = "uid-" + std::to_string(++uids);
  body["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  if (t.custom) {
    body.erase("status");  // the status subresource: create ignores status
    body["metadata"]["generation"] = 1;
  }
  if (t.resource == "pods" && kueueGates) gateForKueue(&body);
  json obj = stamp(std::move(body), t);
  store[t.resource][key] = obj;
  emit("ADDED", t.resource, obj);
  return jsonResponse(201, obj);
}

http::Response FakeKubeApiServer::State::update(const Target& t, json body, bool patch, const std::string& contentType) {
  auto it = store[t.resource].find(t.ns + "/" + t.name);
  if (it == store[t.resource].end()) {
    return statusResponse(404, "NotFound", t.resource + " \"" + t.name + "\" not found");
  }
  if (interfere.erase(t.resource + " " + t.ns + "/" + t.name)) {
    it->second = stamp(it->second, t);
    emit("MODIFIED", t.resource, it->second);
  }
  json current = it->second;
  json next = current;
  if (patch) {
    if (contentType != "application/merge-patch+json" &&
        !(contentType == "application/strategic-merge-patch+json" && !t.custom)) {
      return statusResponse(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/merge-patch+json");
    }
    next.merge_patch(body);
  } else {
    const std::string sent = body["metadata"].value("resourceVersion", "");
    if (!sent.empty() && sent != current["metadata"].value("resourceVersion", "")) {
      return statusResponse(409, "Conflict", "Operation cannot be fulfilled on " + t.resource + " \"" + t.name +
                                                 "\": the object has been modified; please apply your changes to the latest version and try again");
    }
    next = body;
    next["metadata"]["uid"] = current["metadata"]["uid"];
    next["metadata"]["namespace"] = t.ns;
    next["metadata"]["creationTimestamp"] = current["metadata"]["creationTimestamp"];
  }
  if (t.custom) {
    if (t.sub == "status") {  // only status changes through /status
      json s = next.value("status", json::object());
      next = current;
      next["status"] = s;
    } else {
      if (current.contains("status")) next["status"] = current["status"]; else next.erase("status");
      int64_t gen = current["metadata"].value("generation", 1);
      if (next.value("spec", json()) != current.value("spec", json())) ++gen;
      next["metadata"]["generation"] = gen;
    }
  }
  next["metadata"]["name"] = t.name;
  // Names and labels as on create; Pod Security only on create (the API server exempts updates
  // that leave a pod's spec alone, and a pod's spec barely changes).
  if (auto refused = admit(t.resource, kindOf(t.resource), next, nullptr)) {
    return statusResponse(refused->code, refused->reason, refused->message);
  }
  if (next == current) return jsonResponse(200, current);  // a no-op write keeps the version
  json obj = stamp(std::move(next), t);
  it->second = obj;
  emit("MODIFIED", t.resource, obj);
  return jsonResponse(200, obj);
}

http::Response FakeKubeApiServer::State::scale(const Target& t, const http::Request& req) {
  auto it = store[t.resource].find(t.ns + "/" + t.name);
  if (it == store[t.resource].end()) {
    return statusResponse(404, "NotFound", t.resource + " \"" + t.name + "\" not found");
  }
  auto scaleOf = [&](const json& o) {
    const json& m = o["metadata"];
    return json{{"kind", "Scale"},
                {"apiVersion", "autoscaling/v1"},
                {"metadata", {{"name", t.name}, {"namespace", t.ns}, {"uid", m.value("uid", "")},
                              {"resourceVersion", m.value("resourceVersion", "")}}},
                {"spec", {{"replicas", o.value("spec", json::object()).value("workers", json::object()).value("count", 1)}}},
                {"status", {{"replicas", o.value("status", json::object()).value("readyWorkers", 0)}}}};
  };
  if (req.method == "GET") return jsonResponse(200, scaleOf(it->second));
  if (req.method != "PUT" && req.method != "PATCH") return statusResponse(405, "MethodNotAllowed", req.method + " on scale");
  std::string type = req.header("Content-Type");
  if (size_t semi = type.find(';'); semi != std::string::npos) type.resize(semi);
  if (req.method == "PATCH" && type != "application/merge-patch+json") {
    return statusResponse(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/merge-patch+json");
  }
  json body = json::parse(req.body, nullptr, false);
  json scale = scaleOf(it->second);
  if (!body.is_object()) return statusResponse(400, "BadRequest", "the body is not a JSON object");
  if (req.method == "PATCH") scale.merge_patch(body); else scale = body;
  const json replicas = scale.value("spec", json::object()).value("replicas", json());
  if (!replicas.is_number_integer() || replicas.get<int64_t>() < 0) {
    return statusResponse(422, "Invalid", "Scale.autoscaling \"" + t.name + "\" is invalid: spec.replicas: Invalid value");
  }
  json next = it->second;
  next["spec"]["workers"]["count"] = replicas;
  if (next != it->second) {
    next["metadata"]["generation"] = it->second["metadata"].value("generation", 1) + 1;
    it->second = stamp(std::move(next), t);
    emit("MODIFIED", t.resource, it->second);
  }
  return jsonResponse(200, scaleOf(it->second));
}

void FakeKubeApiServer::State::watch(const Target& t, const http::Request& req, std::shared_ptr<http::Responder> out) {
  auto w = std::make_shared<Watcher>();
  w->resource = t.resource;
  w->ns = t.ns;
  w->selector = parseSelector(req.queryValue("labelSelector").value_or(""));
  w->bookmarks = req.queryValue("allowWatchBookmarks").value_or("") == "true";
  const int timeout = std::atoi(req.queryValue("timeoutSeconds").value_or("1800").c_str());
  w->end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  w->out = out;
  const std::string from = req.queryValue("resourceVersion").value_or("");
  out->startStream(200, "application/json");
  if (from.empty() || from == "0") {
    for (const auto& [k, o] : store[t.resource]) {
      if (matches(o, w->ns, w->selector)) out->write(json{{"type", "ADDED"}, {"object", o}}.dump() + "\n");
    }
  } else {
    const int64_t since = std::atoll(from.c_str());
    if (since < compactedAt) {
      json status = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Failure"},
                     {"message", "too old resource version: " + from + " (" + std::to_string(compactedAt) + ")"},
                     {"reason", "Expired"}, {"code", 410}};
      out->write(json{{"type", "ERROR"}, {"object", status}}.dump() + "\n");
      out->finish();
      return;
    }
    for (const HistoryEvent& e : history) {
      if (e.rv > since && e.resource == t.resource && matches(e.object, w->ns, w->selector)) {
        out->write(json{{"type", e.type}, {"object", e.object}}.dump() + "\n");
      }
    }
  }
  watchers.push_back(w);
}

void FakeKubeApiServer::State::handle(http::Request& req, std::shared_ptr<http::Responder> out) {
  std::unique_lock<std::mutex> lock(mu);
  requests.push_back(req.method + " " + std::string(req.target));
  if (!token.empty() && req.header("Authorization") != "Bearer " + token) {
    out->reply(statusResponse(401, "Unauthorized", "Unauthorized"));
    return;
  }
  std::optional<Target> t = parseTarget(req.path);
  if (!t || kindOf(t->resource).empty()) {
    out->reply(statusResponse(404, "NotFound", "the server could not find the requested resource"));
    return;
  }
  if (rbac) {
    const std::string w = req.queryValue("watch").value_or("");
    const FakeRbac::Request r{req.method, w == "1" || w == "true", t->apiVersion,
                              t->resource.substr(t->resource.rfind('/') + 1), t->sub, t->ns, t->name};
    if (std::string why = rbac->requestRefusal(r, req.body); !why.empty()) {
      refused.push_back(req.method + " " + std::string(req.target) + ": " + why);
      return (void)out->reply(statusResponse(403, "Forbidden", why));
    }
  }
  const std::string key = t->ns + "/" + t->name;
  if (req.method == "GET" && t->sub == "log") {
    if (!store["pods"].count(key)) return (void)out->reply(statusResponse(404, "NotFound", "pods \"" + t->name + "\" not found"));
    if (req.queryValue("timestamps").value_or("") == "true") {
      return (void)out->reply(http::Response::text(200, stampedLog(key, req.queryValue("sinceTime").value_or(""))));
    }
    return (void)out->reply(http::Response::text(200, logs[key]));
  }
  if (t->custom && t->sub == "scale" && !t->name.empty()) return (void)out->reply(scale(*t, req));
  if (req.method == "GET" && t->name.empty()) {
    const std::string w = req.queryValue("watch").value_or("");
    if ((w == "1" || w == "true") && watchesUnavailable) {
      return (void)out->reply(statusResponse(503, "ServiceUnavailable", "the server is currently unable to handle the request"));
    }
    if (w == "1" || w == "true") return watch(*t, req, out);
    json items = json::array();
    const auto selector = parseSelector(req.queryValue("labelSelector").value_or(""));
    for (const auto& [k, o] : store[t->resource]) {
      if (matches(o, t->ns, selector)) items.push_back(o);
    }
    return (void)out->reply(jsonResponse(200, {{"kind", kindOf(t->resource) + "List"}, {"apiVersion", t->apiVersion},
                                               {"metadata", {{"resourceVersion", std::to_string(rv)}}}, {"items", items}}));
  }
  if (req.method == "POST" && t->name.empty() && !t->ns.empty()) {
    json body = json::parse(req.body, nullptr, false);
    http::Response created = create(*t, std::move(body));
    auto delay = createDelay.find(t->resource);
    if (delay != createDelay.end()) {
      const Duration d = delay->second;
      lock.unlock();
      std::this_thread::sleep_for(d);
    }
    return (void)out->reply(std::move(created));
  }
  if (t->name.empty()) return (void)out->reply(statusResponse(405, "MethodNotAllowed", req.method + " on a collection"));
  auto it = store[t->resource].find(key);
  if (req.method == "GET") {
    if (it == store[t->resource].end()) return (void)out->reply(statusResponse(404, "NotFound", t->resource + " \"" + t->name + "\" not found"));
    return (void)out->reply(jsonResponse(200, it->second));
  }
  if (req.method == "PUT" || req.method == "PATCH") {
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) return (void)out->reply(statusResponse(400, "BadRequest", "the body is not a JSON object"));
    std::string type = req.header("Content-Type");
    if (size_t semi = type.find(';'); semi != std::string::npos) type.resize(semi);
    return (void)out->reply(update(*t, std::move(body), req.method == "PATCH", type));
  }
  if (req.method == "DELETE") {
    if (it == store[t->resource].end()) return (void)out->reply(statusResponse(404, "NotFound", t->resource + " \"" + t->name + "\" not found"));
    json obj = it->second;
    removeTree(t->resource, key);
    return (void)out->reply(jsonResponse(200, obj));
  }
  out->reply(statusResponse(405, "MethodNotAllowed", req.method));
}

FakeKubeApiServer::FakeKubeApiServer() : state_(std::make_unique<State>()) {}

FakeKubeApiServer::~FakeKubeApiServer() { stop(); }

Status FakeKubeApiServer::start() {
  http::ServerOptions o;
  o.handlerThreads = 2;
  o.idleTimeout = std::chrono::seconds(3600);
  State* s = state_.get();
  server_ = std::make_unique<http::Server>(o, [s](http::Request& req, std::shared_ptr<http::Responder> out) {
    s->handle(req, std::move(out));
  });
  DDP_RETURN_IF_ERROR(server_->start());
  s->reaper = std::thread([s] {
    std::unique_lock<std::mutex> lock(s->mu);
    while (!s->stopping) {
      s->cv.wait_for(lock, std::chrono::milliseconds(20));
      const TimePoint now = std::chrono::steady_clock::now();
      for (auto& w : s->watchers) {
        if (!w->ended && (now >= w->end || w->out->closed())) {
          w->ended = true;
          w->out->finish();
        }
      }
      std::erase_if(s->watchers, [](const auto& w) { return w->ended; });
    }
  });
  return Status::ok();
}

void FakeKubeApiServer::stop() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->stopping) return;
    state_->stopping = true;
    state_->cv.notify_all();
  }
  if (state_->reaper.joinable()) state_->reaper.join();
  closeWatches();
  if (server_) server_->stop();
}

std::string FakeKubeApiServer::url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

void FakeKubeApiServer::requireToken(const std::string& token) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->token = token;
}

void FakeKubeApiServer::enforceRbac(FakeRbac rbac) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->rbac = std::move(rbac);
}

std::vector<std::string> FakeKubeApiServer::refusals() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->refused;
}

std::optional<nlohmann::json> FakeKubeApiServer::object(const std::string& resource, const std::string& ns,
                                                        const std::string& name) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto r = state_->store.find(resource);
  if (r == state_->store.end()) return std::nullopt;
  auto it = r->second.find(ns + "/" + name);
  if (it == r->second.end()) return std::nullopt;
  return it->second;
}

std::vector<nlohmann::json> FakeKubeApiServer::objects(const std::string& resource, const std::string& ns) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  std::vector<json> out;
  auto r = state_->store.find(resource);
  if (r == state_->store.end()) return out;
  for (const auto& [k, o] : r->second) {
    if (ns.empty() || o["metadata"].value("namespace", "") == ns) out.push_back(o);
  }
  return out;
}

nlohmann::json FakeKubeApiServer::put(const std::string& resource, const std::string& ns, nlohmann::json obj) {
  std::lock_guard<std::mutex> lock(state_->mu);
  Target t;
  t.resource = resource;
  const size_t slash = resource.rfind('/');
  t.apiVersion = slash == std::string::npos ? "v1" : resource.substr(0, slash);
  t.custom = resource.rfind("ddp.dev/", 0) == 0;
  t.ns = ns;
  t.name = obj["metadata"].value("name", "");
  const std::string key = ns + "/" + t.name;
  const bool exists = state_->store[resource].count(key) > 0;
  obj["metadata"]["namespace"] = ns;
  if (!exists) obj["metadata"]["uid"] = "uid-" + std::to_string(++state_->uids);
  if (t.custom && !obj["metadata"].contains("generation")) obj["metadata"]["generation"] = 1;
  json stored = state_->stamp(std::move(obj), t);
  state_->store[resource][key] = stored;
  state_->emit(exists ? "MODIFIED" : "ADDED", resource, stored);
  return stored;
}

void FakeKubeApiServer::sendBookmarks() {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (const auto& w : state_->watchers) {
    if (w->ended || !w->bookmarks) continue;
    const size_t slash = w->resource.rfind('/');
    json o = {{"kind", kindOf(w->resource)},
              {"apiVersion", slash == std::string::npos ? "v1" : w->resource.substr(0, slash)},
              {"metadata", {{"resourceVersion", std::to_string(state_->rv)}}}};
    w->out->write(json{{"type", "BOOKMARK"}, {"object", o}}.dump() + "\n");
  }
}

void FakeKubeApiServer::compact() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->history.clear();
  state_->compactedAt = state_->rv;
}

void FakeKubeApiServer::closeWatches() {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (auto& w : state_->watchers) {
    if (!w->ended) {
      w->ended = true;
      w->out->finish();
    }
  }
  state_->watchers.clear();
}

void FakeKubeApiServer::interfereOnNextWrite(const std::string& resource, const std::string& ns,
                                             const std::string& name) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->interfere.insert(resource + " " + ns + "/" + name);
}

void FakeKubeApiServer::setWatchesUnavailable(bool unavailable) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->watchesUnavailable = unavailable;
}

std::vector<std::string> FakeKubeApiServer::requests() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->requests;
}

int64_t FakeKubeApiServer::resourceVersion() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->rv;
}

void FakeKubeApiServer::delayCreateReplies(const std::string& resource, Duration delay) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->createDelay[resource] = delay;
}

void FakeKubeApiServer::setPodLog(const std::string& ns, const std::string& pod, const std::string& text) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->logs[ns + "/" + pod] = text;
  state_->logStamps.erase(ns + "/" + pod);
  state_->stampLog(ns + "/" + pod, text);
}

void FakeKubeApiServer::appendPodLog(const std::string& ns, const std::string& pod, const std::string& text) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->logs[ns + "/" + pod] += text;
  state_->stampLog(ns + "/" + pod, text);
}

void FakeKubeApiServer::enableKueueAdmission(bool on) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->kueueGates = on;
}

int FakeKubeApiServer::admitKueueGroup(const std::string& ns, const std::string& group) {
  std::lock_guard<std::mutex> lock(state_->mu);
  int admitted = 0;
  for (auto& [key, pod] : state_->store["pods"]) {
    const json& meta = pod["metadata"];
    if (meta.value("namespace", "") != ns ||
        meta.value("labels", json::object()).value("kueue.x-k8s.io/pod-group-name", "") != group) {
      continue;
    }
    json& spec = pod["spec"];
    if (!spec.contains("schedulingGates")) continue;
    json gates = json::array();
    for (const json& g : spec["schedulingGates"]) {
      if (g.value("name", "") != "kueue.x-k8s.io/admission") gates.push_back(g);
    }
    if (gates.size() == spec["schedulingGates"].size()) continue;
    if (gates.empty()) {
      spec.erase("schedulingGates");
      pod["status"] = {{"phase", "Pending"}};  // the scheduler's now: no condition yet
    } else {
      spec["schedulingGates"] = gates;
    }
    pod["metadata"]["resourceVersion"] = std::to_string(++state_->rv);
    state_->emit("MODIFIED", "pods", pod);
    ++admitted;
  }
  return admitted;
}

}  // namespace ddp::controller::kube::testing
