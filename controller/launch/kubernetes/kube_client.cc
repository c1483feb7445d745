#include "controller/launch/kubernetes/kube_client.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

// The message of a Kubernetes Status body ({"kind":"Status","message":...}), or the body.
std::string serverMessage(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) return j["message"].get<std::string>();
  return body.size() > 300 ? body.substr(0, 300) + "..." : body;
}

void setTimeouts(httplib::Client& cli, Duration left) {
  const auto us = std::max<int64_t>(1000, std::chrono::duration_cast<std::chrono::microseconds>(left).count());
  const time_t sec = static_cast<time_t>(us / 1000000);
  const time_t usec = static_cast<time_t>(us % 1000000);
  cli.set_connection_timeout(sec, usec);
  cli.set_read_timeout(sec, usec);
  cli.set_write_timeout(sec, usec);
}

}  // namespace

void WatchCancel::cancel() {
  // Under the lock: the watch detaches (and destroys its connection) only after this returns.
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (abort_) abort_();
}

bool WatchCancel::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool WatchCancel::attach(std::function<void()> abort) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return false;
  abort_ = std::move(abort);
  return true;
}

void WatchCancel::detach() {
  std::lock_guard<std::mutex> lock(mu_);
  abort_ = nullptr;
}

Status apiStatus(const KubeResponse& r, const std::string& what) {
  if (r.status >= 200 && r.status < 300) return Status::ok();
  const std::string m = what + ": HTTP " + std::to_string(r.status) + ": " + serverMessage(r.body);
  switch (r.status) {
    case 404: return notFound(m);
    case 409: return serverMessage(r.body).find("already exists") != std::string::npos ? alreadyExists(m) : abortedError(m);
    case 410: return outOfRange(m);
    case 400:
    case 415:
    case 422: return invalidArgument(m);
    case 401:
    case 403: return failedPrecondition(m);
    default: return unavailable(m);
  }
}

Result<std::unique_ptr<KubeClient>> KubeClient::create(KubeConfig config, const Clock& clock) {
  DDP_RETURN_IF_ERROR(config.validate());
  return std::unique_ptr<KubeClient>(new KubeClient(std::move(config), clock));
}

KubeClient::KubeClient(KubeConfig config, const Clock& clock)
    : config_(std::move(config)), clock_(clock), tokens_(config_.tokenFile, clock) {}

Result<KubeResponse> KubeClient::request(const std::string& method, const std::string& path, const std::string& body,
                                         const std::string& contentType, std::optional<Deadline> deadline) {
  const Deadline until = deadline.value_or(Deadline::after(config_.requestTimeout, clock_));
  for (int attempt = 0;; ++attempt) {
    DDP_ASSIGN_OR_RETURN(std::string token, tokens_.token());
    httplib::Client cli(config_.server);
    if (!config_.caFile.empty()) cli.set_ca_cert_path(config_.caFile);
    cli.enable_server_certificate_verification(true);
    setTimeouts(cli, until.remaining(clock_));
    httplib::Request req;
    req.method = method;
    req.path = path;
    req.headers = {{"Accept", "application/json"}, {"User-Agent", "ddp-controller"}};
    if (!token.empty()) req.headers.emplace("Authorization", "Bearer " + token);
    if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
      req.body = body;
      req.headers.emplace("Content-Type", contentType);
    }
    auto res = cli.send(req);
    if (!res) {
      if (until.expired(clock_)) return timeoutError(method + " " + path + ": deadline passed");
      return unavailable(method + " " + path + ": " + httplib::to_string(res.error()));
    }
    if (res->status == 401 && attempt == 0 && !config_.tokenFile.empty()) {
      tokens_.invalidate();  // rotated: read the file again once
      continue;
    }
    return KubeResponse{res->status, res->body};
  }
}

Result<json> KubeClient::jsonCall(const std::string& method, const std::string& path, const std::string& body,
                                  const std::string& contentType, const std::string& what) {
  DDP_ASSIGN_OR_RETURN(KubeResponse r, request(method, path, body, contentType));
  DDP_RETURN_IF_ERROR(apiStatus(r, what));
  json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded()) return internalError(what + ": the answer is not JSON");
  return j;
}

Result<json> KubeClient::get(const std::string& path) { return jsonCall("GET", path, "", "", "get " + path); }

Result<json> KubeClient::create(const std::string& collectionPath, const json& object) {
  return jsonCall("POST", collectionPath, object.dump(), "application/json", "create in " + collectionPath);
}

Result<json> KubeClient::replace(const std::string& path, const json& object) {
  return jsonCall("PUT", path, object.dump(), "application/json", "replace " + path);
}

Result<json> KubeClient::mergePatch(const std::string& path, const json& patch) {
  return jsonCall("PATCH", path, patch.dump(), "application/merge-patch+json", "patch " + path);
}

Status KubeClient::remove(const std::string& path, const std::string& propagation) {
  std::string body;
  if (!propagation.empty()) body = json{{"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", propagation}}.dump();
  DDP_ASSIGN_OR_RETURN(KubeResponse r, request("DELETE", path, body, "application/json"));
  return apiStatus(r, "delete " + path);
}

Status KubeClient::watch(const std::string& pathWithQuery, const std::function<bool(const std::string&)>& onLine,
                         Deadline deadline, WatchCancel* cancel) {
  DDP_ASSIGN_OR_RETURN(std::string token, tokens_.token());
  httplib::Client cli(config_.server);
  if (!config_.caFile.empty()) cli.set_ca_cert_path(config_.caFile);
  cli.enable_server_certificate_verification(true);
  setTimeouts(cli, deadline.remaining(clock_));
  if (cancel && !cancel->attach([&cli] { cli.stop(); })) return abortedError("watch " + pathWithQuery + ": cancelled");
  struct Detach {
    WatchCancel* c;
    ~Detach() {
      if (c) c->detach();
    }
  } detach{cancel};
  httplib::Request req;
  req.method = "GET";
  req.path = pathWithQuery;
  req.headers = {{"Accept", "application/json"}, {"User-Agent", "ddp-controller"}};
  if (!token.empty()) req.headers.emplace("Authorization", "Bearer " + token);
  int status = 0;
  std::string buffer, errorBody;
  bool stopped = false;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status != 200) {
      errorBody.append(data, n);
      return true;
    }
    buffer.append(data, n);
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      if (line.empty()) continue;
      if (!onLine(line)) {
        stopped = true;
        return false;
      }
    }
    if (deadline.expired(clock_)) return false;
    return true;
  };
  auto res = cli.send(req);
  if (stopped) return Status::ok();
  if (cancel && cancel->cancelled()) return abortedError("watch " + pathWithQuery + ": cancelled");
  if (status != 0 && status != 200) {
    if (status == 401) tokens_.invalidate();
    return apiStatus(KubeResponse{status, errorBody}, "watch " + pathWithQuery);
  }
  if (deadline.expired(clock_)) return timeoutError("watch " + pathWithQuery + ": deadline passed");
  if (!res) return unavailable("watch " + pathWithQuery + ": " + httplib::to_string(res.error()));
  return Status::ok();
}

}  // namespace ddp::controller::kube
