#include "worker/runtime/worker_config.h"

#include <cstdlib>
#include <map>

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

struct Option {
  const char* flag;
  const char* env;
};
constexpr Option kStore{"--store", "DDP_STORE_ADDR"};
constexpr Option kJob{"--job", "DDP_JOB_FILE"};
constexpr Option kRank{"--rank", "DDP_RANK"};
constexpr Option kWorld{"--world-size", "DDP_WORLD_SIZE"};
constexpr Option kGeneration{"--generation", "DDP_GENERATION"};
constexpr Option kLogFormat{"--log-format", "DDP_LOG_FORMAT"};
constexpr Option kLogLevel{"--log-level", "DDP_LOG_LEVEL"};
constexpr Option kCkptDir{"--checkpoint-dir", "DDP_CHECKPOINT_DIR"};
constexpr Option kAll[] = {kStore, kJob, kRank, kWorld, kGeneration, kLogFormat, kLogLevel, kCkptDir};

std::string describe(const Option& o) { return std::string(o.flag) + " / " + o.env; }

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

std::string workerUsage() {
  return "usage: ddp-worker [--store HOST:PORT] [--job FILE] [--rank N] [--world-size N]\n"
         "                  [--generation N] [--log-format human|json] [--log-level LEVEL]\n"
         "                  [--checkpoint-dir DIR]\n"
         "One training worker of a job; normally started by `ddpctl run`. Every flag falls back\n"
         "to its environment variable: DDP_STORE_ADDR, DDP_JOB_FILE, DDP_RANK, DDP_WORLD_SIZE,\n"
         "DDP_GENERATION, DDP_LOG_FORMAT, DDP_LOG_LEVEL, DDP_CHECKPOINT_DIR.\n";
}

Result<WorkerConfig> parseWorkerConfig(const std::vector<std::string>& args, const EnvLookup& env) {
  std::map<std::string, std::string> values;  // keyed by flag
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
  auto get = [&](const Option& o) -> std::optional<std::string> {
    if (auto it = values.find(o.flag); it != values.end()) return it->second;
    return env(o.env);
  };
  WorkerConfig c;
  if (auto v = get(kStore)) DDP_RETURN_IF_ERROR(parseHostPort(*v, describe(kStore), &c.storeHost, &c.storePort));
  if (auto v = get(kJob)) c.jobFile = *v;
  int64_t n = 0;
  if (auto v = get(kRank)) {
    DDP_RETURN_IF_ERROR(parseInt(*v, describe(kRank), &n));
    c.rank = static_cast<int>(n);
  }
  if (auto v = get(kWorld)) {
    DDP_RETURN_IF_ERROR(parseInt(*v, describe(kWorld), &n));
    c.worldSize = static_cast<int>(n);
  }
  if (auto v = get(kGeneration)) DDP_RETURN_IF_ERROR(parseInt(*v, describe(kGeneration), &c.generation));
  if (auto v = get(kLogFormat); v && !parseLogFormat(*v, &c.logFormat)) {
    return invalidArgument(describe(kLogFormat) + ": '" + *v + "' is not human or json");
  }
  if (auto v = get(kLogLevel); v && !log::parseLevel(*v, &c.logLevel)) {
    return invalidArgument(describe(kLogLevel) + ": '" + *v + "' is not debug|info|warning|error|off");
  }
  if (auto v = get(kCkptDir)) c.checkpointDirOverride = *v;
  DDP_RETURN_IF_ERROR(c.validate());
  return c;
}

Status WorkerConfig::validate() const {
  if (storeHost.empty()) return invalidArgument(describe(kStore) + ": required (the store's HOST:PORT)");
  if (jobFile.empty()) return invalidArgument(describe(kJob) + ": required (the job YAML)");
  if (worldSize <= 0) return invalidArgument(describe(kWorld) + ": required, must be >= 1");
  if (rank < 0 || rank >= worldSize) {
    return invalidArgument(describe(kRank) + ": " + std::to_string(rank) + " not in [0, " +
                           std::to_string(worldSize) + ")");
  }
  if (generation < 0) return invalidArgument(describe(kGeneration) + ": must be >= 0");
  return Status::ok();
}

}  // namespace ddp::runtime
