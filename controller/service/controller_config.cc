#include "controller/service/controller_config.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>

#include "common/jobspec/job_names.h"
#include "common/jobspec/job_spec_kubernetes.h"

namespace ddp::controller {
namespace {

struct Option {
  const char* flag;
  const char* env;
};
constexpr Option kListen{"--listen", "DDP_CONTROLLER_LISTEN"};
constexpr Option kWorkerListen{"--worker-listen", "DDP_CONTROLLER_WORKER_LISTEN"};
constexpr Option kPathRoots{"--allowed-path-roots", "DDP_CONTROLLER_ALLOWED_PATH_ROOTS"};
constexpr Option kAllowWorkerCommand{"--allow-worker-command", "DDP_CONTROLLER_ALLOW_WORKER_COMMAND"};
constexpr Option kPerClient{"--max-connections-per-client", "DDP_CONTROLLER_MAX_CONNECTIONS_PER_CLIENT"};
constexpr Option kStateDir{"--state-dir", "DDP_CONTROLLER_STATE_DIR"};
constexpr Option kTokenFile{"--token-file", "DDP_CONTROLLER_TOKEN_FILE"};
constexpr Option kTokenSecret{"--token-secret", "DDP_CONTROLLER_TOKEN_SECRET"};
constexpr Option kWorkerBin{"--worker-bin", "DDP_CONTROLLER_WORKER_BIN"};
constexpr Option kAdvertise{"--advertise-url", "DDP_CONTROLLER_ADVERTISE_URL"};
constexpr Option kMaxJobBytes{"--max-job-bytes", "DDP_CONTROLLER_MAX_JOB_BYTES"};
constexpr Option kHandlerThreads{"--handler-threads", "DDP_CONTROLLER_HANDLER_THREADS"};
constexpr Option kLogLevel{"--log-level", "DDP_CONTROLLER_LOG_LEVEL"};
constexpr Option kLauncher{"--launcher", "DDP_CONTROLLER_LAUNCHER"};
constexpr Option kWorkerImage{"--worker-image", "DDP_CONTROLLER_WORKER_IMAGE"};
constexpr Option kWatchNamespace{"--watch-namespace", "DDP_CONTROLLER_WATCH_NAMESPACE"};
constexpr Option kWatchAll{"--watch-all-namespaces", "DDP_CONTROLLER_WATCH_ALL_NAMESPACES"};  // a switch
constexpr Option kLeaderLease{"--leader-election-lease", "DDP_CONTROLLER_LEADER_ELECTION_LEASE"};
constexpr Option kKubeServer{"--kube-server", "DDP_CONTROLLER_KUBE_SERVER"};
constexpr Option kGangScheduler{"--gang-scheduler-name", "DDP_CONTROLLER_GANG_SCHEDULER_NAME"};
constexpr Option kMetricsOpen{"--metrics-open", "DDP_CONTROLLER_METRICS_OPEN"};  // a switch
constexpr Option kMetricsRetention{"--metrics-retention", "DDP_CONTROLLER_METRICS_RETENTION"};
constexpr Option kAll[] = {kListen,       kWorkerListen, kPerClient,   kPathRoots,   kStateDir,     kTokenFile, kTokenSecret,   kWorkerBin,     kAdvertise,
                           kMaxJobBytes,  kHandlerThreads, kLogLevel,  kLauncher,      kWorkerImage,
                           kWatchNamespace, kWatchAll, kLeaderLease, kKubeServer, kMetricsOpen,  kMetricsRetention, kAllowWorkerCommand, kGangScheduler};

std::string describe(const Option& o) { return std::string(o.flag) + " / " + o.env; }

Status parseInt(const std::string& text, const Option& o, int64_t lo, int64_t hi, int64_t* out) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
    return invalidArgument(describe(o) + ": '" + text + "' is not an integer");
  }
  if (v < lo || v > hi) {
    return invalidArgument(describe(o) + ": " + text + " is not in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = v;
  return Status::ok();
}

Status parseHostPort(const std::string& v, const Option& o, std::string* host, int* port) {
  auto colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0) return invalidArgument(describe(o) + ": '" + v + "' is not HOST:PORT");
  *host = v.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  int64_t p = 0;
  DDP_RETURN_IF_ERROR(parseInt(v.substr(colon + 1), o, 0, 65535, &p));
  *port = static_cast<int>(p);
  return Status::ok();
}

// "NS,NS": namespace names (DNS-1123 labels), at least one, none twice.
Status parseNamespaceList(const std::string& v, const Option& o, std::vector<std::string>* out) {
  for (size_t from = 0; from <= v.size();) {
    const size_t comma = std::min(v.find(',', from), v.size());
    const std::string ns = v.substr(from, comma - from);
    if (!isDns1123Label(ns)) {
      return invalidArgument(describe(o) + ": '" + ns + "' is not a namespace name (a DNS-1123 label)");
    }
    if (std::find(out->begin(), out->end(), ns) != out->end()) return invalidArgument(describe(o) + ": '" + ns + "' twice");
    out->push_back(ns);
    from = comma + 1;
  }
  return Status::ok();
}

// A switch's value: "true", "1", "false", "0", or "" (off).
Status parseSwitch(const std::string& v, const Option& o, bool* out) {
  if (v == "1" || v == "true") {
    *out = true;
  } else if (v == "0" || v == "false" || v.empty()) {
    *out = false;
  } else {
    return invalidArgument(describe(o) + ": '" + v + "' is not true, false, 1 or 0");
  }
  return Status::ok();
}

// "DIR:DIR": absolute directories, empty items skipped.
// Colon-separated absolute paths (--allowed-path-roots, --allow-worker-command).
Status parsePathList(const std::string& v, const Option& o, std::vector<std::string>* out) {
  for (size_t from = 0; from <= v.size();) {
    const size_t colon = std::min(v.find(':', from), v.size());
    const std::string root = v.substr(from, colon - from);
    if (!root.empty()) {
      if (root.front() != '/') return invalidArgument(describe(o) + ": '" + root + "' is not an absolute path");
      out->push_back(root);
    }
    from = colon + 1;
  }
  return Status::ok();
}

}  // namespace

ConfigEnv processConfigEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::string programDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

std::string controllerUsage() {
  return "usage: ddp-controller --state-dir DIR [--listen HOST:PORT] [--worker-listen HOST:PORT]\n"
         "                      [--max-connections-per-client N] [--allowed-path-roots DIR:DIR]\n"
         "                      [--token-file FILE | --token-secret NAME]\n"
         "                      [--allow-worker-command PATH:PATH]\n"
         "                      [--worker-bin PATH] [--advertise-url URL] [--max-job-bytes N]\n"
         "                      [--handler-threads N] [--log-level debug|info|warning|error]\n"
         "                      [--launcher local|external|kubernetes] [--worker-image IMAGE]\n"
         "                      [--watch-namespace NS[,NS]] [--watch-all-namespaces]\n"
         "                      [--leader-election-lease NAME]\n"
         "                      [--gang-scheduler-name volcano|scheduler-plugins-scheduler]\n"
         "                      [--metrics-open] [--metrics-retention SECONDS]\n"
         "The training service: REST job API, rendezvous, store and heartbeats for workers, and\n"
         "a local launcher that runs workers on this host. Prints `listening on http://HOST:PORT`\n"
         "and `workers on http://HOST:PORT` when ready. Workers reach it on --worker-listen (their\n"
         "routes and /healthz, /readyz; default: the --listen host, the port an earlier start on\n"
         "this state dir used, else any) and are told --advertise-url (default: that address);\n"
         "users on --listen, which takes at most --max-connections-per-client (1024; 0: no cap)\n"
         "connections from one address. A job's checkpoint.dir must lie under one of\n"
         "--allowed-path-roots (colon-separated absolute directories; default STATE_DIR/checkpoints\n"
         "and $TMPDIR or /tmp). A job's worker.command (a trainer of its own) runs only when it is a\n"
         "program listed in, or under a folder listed in, --allow-worker-command (colon-separated\n"
         "absolute paths; default none: refused at submission).\n"
         "SIGTERM stops it (running workers keep running and are re-adopted by the\n"
         "next start on the same state dir). Every flag falls back to DDP_CONTROLLER_<NAME>\n"
         "(DDP_CONTROLLER_LISTEN, DDP_CONTROLLER_STATE_DIR, DDP_CONTROLLER_TOKEN_FILE, ...).\n"
         "The API token is read from --token-file, or generated in STATE_DIR/token (mode 0600).\n"
         "GET /metrics (Prometheus text) needs that token too, unless --metrics-open; a finished\n"
         "job's series stay --metrics-retention seconds (900).\n"
         "With --launcher kubernetes and --leader-election-lease, a replica that loses the lease\n"
         "exits at once with status 3 (Kubernetes restarts it as a standby).\n";
}

Status ControllerConfig::validate() const {
  if (stateDir.empty()) return invalidArgument(describe(kStateDir) + ": required (where jobs, logs and the token live)");
  if (listenHost.empty()) return invalidArgument(describe(kListen) + ": empty host");
  if (listenPort < 0 || listenPort > 65535) return invalidArgument(describe(kListen) + ": port out of range");
  if (workerListenPort < 0 || workerListenPort > 65535) return invalidArgument(describe(kWorkerListen) + ": port out of range");
  if (workerListenPort != 0 && workerListenPort == listenPort && (workerListenHost.empty() || workerListenHost == listenHost)) {
    return invalidArgument(describe(kWorkerListen) + ": the workers need a port of their own, not --listen's " +
                           std::to_string(listenPort));
  }
  if (maxJobBytes < 1024) return invalidArgument(describe(kMaxJobBytes) + ": must be at least 1024");
  if (handlerThreads < 1 || handlerThreads > 256) return invalidArgument(describe(kHandlerThreads) + ": must be in [1, 256]");
  if (persistEvery <= Duration::zero()) return invalidArgument("persistEvery must be > 0");
  DDP_RETURN_IF_ERROR(jobTimings.validate());
  if (metricsRetention < Duration::zero()) return invalidArgument(describe(kMetricsRetention) + ": must be >= 0");
  if (launcher != "local" && launcher != "external" && launcher != "kubernetes") {
    return invalidArgument(describe(kLauncher) + ": '" + launcher + "' is not local, external or kubernetes");
  }
  if (!tokenSecret.empty() && launcher != "kubernetes") {
    return invalidArgument(describe(kTokenSecret) + ": only with --launcher kubernetes (a Secret of its namespace)");
  }
  if (!tokenSecret.empty() && !tokenFile.empty()) {
    return invalidArgument(describe(kTokenSecret) + ": not with " + describe(kTokenFile) + " (one source of the token)");
  }
  if (!gangSchedulerName.empty() && !isDnsSubdomain(gangSchedulerName)) {
    return invalidArgument(describe(kGangScheduler) + ": '" + gangSchedulerName + "' is not a scheduler name");
  }
  if (launcher == "kubernetes" && workerImage.empty()) {
    return invalidArgument(describe(kWorkerImage) + ": required with --launcher kubernetes (the default worker image)");
  }
  return Status::ok();
}

Result<ControllerConfig> parseControllerConfig(const std::vector<std::string>& args, const ConfigEnv& env) {
  std::map<std::string, std::string> values;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") return notFound(controllerUsage());
    std::string flag = a, value;
    bool has = false;
    if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
      has = true;
    }
    bool known = false;
    for (const auto& o : kAll) known = known || flag == o.flag;
    if (!known) return invalidArgument("unknown argument '" + a + "'\n" + controllerUsage());
    if (!has && (flag == kMetricsOpen.flag || flag == kWatchAll.flag)) {
      value = "true";  // a switch: no value follows
      has = true;
    }
    if (!has) {
      if (i + 1 >= args.size()) return invalidArgument(flag + ": missing value");
      value = args[++i];
    }
    values[flag] = value;
  }
  auto get = [&](const Option& o) -> std::optional<std::string> {
    if (auto it = values.find(o.flag); it != values.end()) return it->second;
    return env(o.env);
  };
  ControllerConfig c;
  if (auto v = get(kListen)) DDP_RETURN_IF_ERROR(parseHostPort(*v, kListen, &c.listenHost, &c.listenPort));
  if (auto v = get(kWorkerListen)) {
    DDP_RETURN_IF_ERROR(parseHostPort(*v, kWorkerListen, &c.workerListenHost, &c.workerListenPort));
  }
  if (auto v = get(kStateDir)) c.stateDir = *v;
  if (auto v = env("TMPDIR"); v && !v->empty() && v->front() == '/') c.tmpDir = *v;
  if (auto v = get(kPathRoots)) DDP_RETURN_IF_ERROR(parsePathList(*v, kPathRoots, &c.allowedPathRoots));
  if (auto v = get(kAllowWorkerCommand)) DDP_RETURN_IF_ERROR(parsePathList(*v, kAllowWorkerCommand, &c.allowedWorkerCommands));
  if (auto v = get(kTokenFile)) c.tokenFile = *v;
  if (auto v = get(kTokenSecret)) c.tokenSecret = *v;
  if (auto v = get(kWorkerBin)) c.workerBinary = *v;
  if (auto v = get(kAdvertise)) c.advertiseUrl = *v;
  int64_t n = 0;
  if (auto v = get(kPerClient)) {
    DDP_RETURN_IF_ERROR(parseInt(*v, kPerClient, 0, 1 << 20, &n));
    c.maxConnectionsPerClient = static_cast<size_t>(n);
  }
  if (auto v = get(kMaxJobBytes)) {
    DDP_RETURN_IF_ERROR(parseInt(*v, kMaxJobBytes, 1024, int64_t{1} << 30, &n));
    c.maxJobBytes = static_cast<size_t>(n);
  }
  if (auto v = get(kHandlerThreads)) {
    DDP_RETURN_IF_ERROR(parseInt(*v, kHandlerThreads, 1, 256, &n));
    c.handlerThreads = static_cast<int>(n);
  }
  if (auto v = get(kLogLevel); v && !log::parseLevel(*v, &c.logLevel)) {
    return invalidArgument(describe(kLogLevel) + ": '" + *v + "' is not debug|info|warning|error|off");
  }
  if (auto v = get(kLauncher)) c.launcher = *v;
  if (auto v = get(kWorkerImage)) c.workerImage = *v;
  if (auto v = get(kWatchNamespace)) {
    DDP_RETURN_IF_ERROR(parseNamespaceList(*v, kWatchNamespace, &c.watchNamespaces));
    c.watchNamespace = c.watchNamespaces.front();
  }
  if (auto v = get(kWatchAll)) DDP_RETURN_IF_ERROR(parseSwitch(*v, kWatchAll, &c.watchAllNamespaces));
  if (auto v = get(kLeaderLease)) c.leaderElectionLease = *v;
  if (auto v = get(kKubeServer)) c.kubeServer = *v;
  if (auto v = get(kGangScheduler)) c.gangSchedulerName = *v;
  if (auto v = env("POD_NAME")) c.podName = *v;  // the downward API (the Helm chart sets it)
  if (auto v = get(kMetricsOpen)) DDP_RETURN_IF_ERROR(parseSwitch(*v, kMetricsOpen, &c.metricsOpen));
  if (auto v = get(kMetricsRetention)) {
    DDP_RETURN_IF_ERROR(parseInt(*v, kMetricsRetention, 0, int64_t{7} * 24 * 3600, &n));
    c.metricsRetention = std::chrono::seconds(n);
  }
  DDP_RETURN_IF_ERROR(c.validate());
  return c;
}

}  // namespace ddp::controller
