#include "controller/launch/kubernetes/kube_config.h"

#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace ddp::controller::kube {
namespace {

bool readable(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<std::string> readTrimmed(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return unavailable("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  if (s.empty()) return unavailable("'" + path + "' is empty");
  return s;
}

}  // namespace

Status KubeConfig::validate() const {
  if (server.rfind("https://", 0) == 0) {
    if (caFile.empty()) return invalidArgument("kubernetes: https server '" + server + "' needs a CA file");
    return Status::ok();
  }
  if (server.rfind("http://", 0) == 0) return Status::ok();
  return invalidArgument("kubernetes: server '" + server + "' must be an https:// (or http://) URL");
}

Result<KubeConfig> inClusterConfig(const EnvLookup& env, const std::string& dir) {
  auto get = [&](const char* name) -> std::string {
    std::optional<std::string> v = env ? env(name) : std::nullopt;
    return v ? *v : "";
  };
  const std::string host = get("KUBERNETES_SERVICE_HOST");
  std::string port = get("KUBERNETES_SERVICE_PORT_HTTPS");
  if (port.empty()) port = get("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return failedPrecondition(
        "not running in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  KubeConfig c;
  const bool ipv6 = host.find(':') != std::string::npos;
  c.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
  c.caFile = dir + "/ca.crt";
  c.tokenFile = dir + "/token";
  for (const std::string* f : {&c.caFile, &c.tokenFile}) {
    if (!readable(*f)) return failedPrecondition("in-cluster configuration: cannot read '" + *f + "'");
  }
  auto ns = readTrimmed(dir + "/namespace");
  if (!ns.isOk()) return failedPrecondition("in-cluster configuration: " + ns.status().message());
  c.nameSpace = *ns;
  DDP_RETURN_IF_ERROR(c.validate());
  return c;
}

TokenSource::TokenSource(std::string file, const Clock& clock, Duration refresh)
    : file_(std::move(file)), clock_(clock), refresh_(refresh) {}

Result<std::string> TokenSource::token() {
  if (file_.empty()) return std::string();
  std::lock_guard<std::mutex> lock(mu_);
  const TimePoint now = clock_.now();
  if (readAt_ && now - *readAt_ < refresh_) return token_;
  auto t = readTrimmed(file_);
  if (!t.isOk()) return unavailable("service-account token: " + t.status().message());
  token_ = *t;
  readAt_ = now;
  return token_;
}

void TokenSource::invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  readAt_.reset();
}

}  // namespace ddp::controller::kube
