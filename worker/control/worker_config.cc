#include "worker/control/worker_config.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

#include "common/launch/worker_env.h"

namespace ddp::runtime {
namespace {

Status parseInt(const std::string& text, const std::string& what, int64_t* out) {
  if (text.empty()) return invalidArgument(what + ": empty, expected an integer");
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) return invalidArgument(what + ": '" + text + "' is not an integer");
  *out = v;
  return Status::ok();
}

// One setting: its flag and the environment variable it overrides (nullptr: flag only).
struct Option {
  const char* flag;
  const char* env;
};
constexpr Option kController{"--controller", launch::kEnvControllerUrl};
constexpr Option kJob{"--job", launch::kEnvJobName};
constexpr Option kTokenFile{"--token-file", nullptr};  // alternative to DDP_JOB_TOKEN
constexpr Option kWorkerId{"--worker-id", launch::kEnvWorkerId};
constexpr Option kAdvertise{"--advertise-address", launch::kEnvAdvertiseAddr};
constexpr Option kLogFormat{"--log-format", launch::kEnvLogFormat};
constexpr Option kLogLevel{"--log-level", launch::kEnvLogLevel};
constexpr Option kCkptDir{"--checkpoint-dir", launch::kEnvCheckpointDir};
constexpr Option kPriority{"--comm-thread-priority", launch::kEnvCommThreadPriority};
constexpr Option kSameHost{"--same-host-memory", launch::kEnvSameHostMemory};
constexpr Option kPodIds{"--pod-worker-ids", launch::kEnvPodWorkerIds};
constexpr Option kLocalRank{"--local-rank", launch::kEnvLocalRank};
constexpr Option kAll[] = {kController, kJob,      kTokenFile, kWorkerId, kAdvertise, kLogFormat,
                           kLogLevel,   kCkptDir,  kPriority,  kSameHost, kPodIds,    kLocalRank};

std::string describe(const Option& o) { return std::string(o.flag) + " / " + (o.env ? o.env : ""); }
std::string describeToken() { return std::string(kTokenFile.flag) + " / " + launch::kEnvJobToken; }

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t start = 0;
  while (start < s.size() && (s[start] == ' ' || s[start] == '\t')) ++start;
  return s.substr(start);
}

Result<std::string> readTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalidArgument(std::string(kTokenFile.flag) + ": cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string token = trimmed(ss.str());
  if (token.empty()) return invalidArgument(std::string(kTokenFile.flag) + ": '" + path + "' is empty");
  return token;
}

// Flag values by flag name; NotFound for --help (message: the usage).
Result<std::map<std::string, std::string>> scanFlags(const std::vector<std::string>& args) {
  std::map<std::string, std::string> values;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") return notFound(workerUsage());
    std::string flag = a, value;
    bool hasValue = false;
    if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
      hasValue = true;
    }
    bool known = false;
    for (const auto& o : kAll) known = known || flag == o.flag;
    if (!known) return invalidArgument("unknown argument '" + a + "'\n" + workerUsage());
    if (!hasValue) {
      if (i + 1 >= args.size()) return invalidArgument(flag + ": missing value");
      value = args[++i];
    }
    values[flag] = value;
  }
  return values;
}

// "a,b,c" -> {a, b, c}: non-empty, distinct ids.
Result<std::vector<std::string>> parsePodWorkerIds(const std::string& text) {
  std::vector<std::string> ids;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    std::string id = trimmed(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (id.empty()) return invalidArgument(describe(kPodIds) + ": '" + text + "' has an empty worker id");
    for (const std::string& seen : ids) {
      if (seen == id) return invalidArgument(describe(kPodIds) + ": worker id '" + id + "' appears twice");
    }
    ids.push_back(std::move(id));
    if (comma == std::string::npos) return ids;
    start = comma + 1;
  }
}

}  // namespace

bool parseLogFormat(const std::string& text, LogFormat* out) {
  if (text == "human" || text == "text") *out = LogFormat::kHuman;
  else if (text == "json") *out = LogFormat::kJson;
  else return false;
  return true;
}

EnvLookup processEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::vector<std::string> processEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

Status parseHostPort(const std::string& text, const std::string& what, std::string* host, int* port) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return invalidArgument(what + ": '" + text + "' is not HOST:PORT");
  }
  int64_t p = 0;
  DDP_RETURN_IF_ERROR(parseInt(text.substr(colon + 1), what + " port", &p));
  if (p <= 0 || p > 65535) return invalidArgument(what + ": port " + std::to_string(p) + " out of range");
  *host = text.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  *port = static_cast<int>(p);
  return Status::ok();
}

Status parseControllerUrl(const std::string& url, const std::string& what, std::string* host, int* port) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) {
    return invalidArgument(what + ": '" + url + "' is not http://HOST:PORT");
  }
  std::string rest = url.substr(kScheme.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) {
    return invalidArgument(what + ": '" + url + "' has a path; expected http://HOST:PORT");
  }
  return parseHostPort(rest, what, host, port);
}

std::string workerUsage() {
  return "usage: ddp-worker [--controller URL] [--job NAME] [--token-file FILE] [--worker-id ID]\n"
         "                  [--advertise-address HOST] [--log-format human|json] [--log-level LEVEL]\n"
         "                  [--checkpoint-dir DIR] [--comm-thread-priority auto|realtime|normal]\n"
         "                  [--same-host-memory on|off] [--pod-worker-ids ID,ID,... | --local-rank N]\n"
         "One training worker of a job; normally started by the controller's launcher. It registers\n"
         "with the controller, which assigns its rank and hands it the job spec. Every flag overrides\n"
         "its environment variable: DDP_CONTROLLER_URL, DDP_JOB_NAME, DDP_JOB_TOKEN (the token\n"
         "itself; --token-file names a file holding it), DDP_WORKER_ID, DDP_ADVERTISE_ADDR,\n"
         "DDP_LOG_FORMAT, DDP_LOG_LEVEL, DDP_CHECKPOINT_DIR, DDP_COMM_THREAD_PRIORITY,\n"
         "DDP_SAME_HOST_MEMORY, DDP_POD_WORKER_IDS (a pod of several ranks: start and supervise one\n"
         "worker per id), DDP_LOCAL_RANK.\n";
}

Result<WorkerConfig> parseWorkerConfig(const std::vector<std::string>& args, const EnvLookup& env) {
  DDP_ASSIGN_OR_RETURN(auto values, scanFlags(args));
  auto get = [&](const Option& o) -> std::optional<std::string> {
    if (auto it = values.find(o.flag); it != values.end()) return it->second;
    if (o.env == nullptr) return std::nullopt;
    auto v = env(o.env);
    if (v && v->empty()) return std::nullopt;  // set but empty counts as unset
    return v;
  };
  WorkerConfig c;
  if (auto v = get(kController)) {
    c.controllerUrl = *v;
    while (!c.controllerUrl.empty() && c.controllerUrl.back() == '/') c.controllerUrl.pop_back();
  }
  if (auto v = get(kJob)) c.jobName = *v;
  if (auto v = get(kTokenFile)) {
    DDP_ASSIGN_OR_RETURN(c.jobToken, readTokenFile(*v));
  } else if (auto t = env(launch::kEnvJobToken)) {
    c.jobToken = trimmed(*t);
  }
  if (auto v = get(kWorkerId)) c.workerId = *v;
  if (auto v = get(kAdvertise)) c.advertiseAddress = *v;
  if (auto v = get(kLogFormat)) {
    LogFormat f;
    if (!parseLogFormat(*v, &f)) return invalidArgument(describe(kLogFormat) + ": '" + *v + "' is not human or json");
    c.logFormat = f;
  }
  if (auto v = get(kLogLevel); v && !log::parseLevel(*v, &c.logLevel)) {
    return invalidArgument(describe(kLogLevel) + ": '" + *v + "' is not debug|info|warning|error|off");
  }
  if (auto v = get(kCkptDir)) c.checkpointDirOverride = *v;
  if (auto v = get(kPriority)) {
    auto p = parseCommThreadPriority(*v);
    if (!p.isOk()) return invalidArgument(describe(kPriority) + ": " + p.status().message());
    c.commThreadPriority = *p;
  }
  if (auto v = get(kSameHost)) {
    if (*v != "on" && *v != "off") return invalidArgument(describe(kSameHost) + ": '" + *v + "' is not on or off");
    c.sameHostMemory = *v == "on";
  }
  if (auto v = get(kPodIds)) {
    DDP_ASSIGN_OR_RETURN(c.podWorkerIds, parsePodWorkerIds(*v));
  }
  if (auto v = get(kLocalRank)) {
    int64_t n = 0;
    DDP_RETURN_IF_ERROR(parseInt(*v, describe(kLocalRank), &n));
    if (n < 0 || n >= 1024) return invalidArgument(describe(kLocalRank) + ": " + *v + " is not in [0, 1024)");
    c.localRank = static_cast<int>(n);
  }
  DDP_RETURN_IF_ERROR(c.validate());
  return c;
}

Status WorkerConfig::validate() const {
  if (controllerUrl.empty()) return invalidArgument(describe(kController) + ": required (the controller's http://HOST:PORT)");
  std::string host;
  int port = 0;
  DDP_RETURN_IF_ERROR(parseControllerUrl(controllerUrl, describe(kController), &host, &port));
  if (jobName.empty()) return invalidArgument(describe(kJob) + ": required (the job's name)");
  if (jobToken.empty()) return invalidArgument(describeToken() + ": required (the job's worker token)");
  if (!podWorkerIds.empty()) {
    if (!workerId.empty()) {
      return invalidArgument(describe(kPodIds) + ": not with " + describe(kWorkerId) +
                             " (a supervisor gives each of its ranks its id)");
    }
    if (localRank) return invalidArgument(describe(kPodIds) + ": not with " + describe(kLocalRank));
  } else if (workerId.empty()) {
    return invalidArgument(describe(kWorkerId) + ": required (this worker's id)");
  }
  if (advertiseAddress.empty()) return invalidArgument(describe(kAdvertise) + ": must not be empty");
  return Status::ok();
}

}  // namespace ddp::runtime
