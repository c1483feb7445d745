#include "controller/service/controller.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>

#include "common/log.h"
#include "common/secret.h"
#include "common/store/store_service.h"
#include "controller/api/api_server.h"
#include "controller/jobs/job_manager.h"
#include "controller/launch/external_launcher.h"
#include "controller/launch/kubernetes/kube_config.h"
#include "controller/kubernetes/kubernetes_runtime.h"
#include "controller/kubernetes/token_secret.h"
#include "controller/launch/local_launcher.h"
#include "controller/metrics/controller_metrics.h"
#include "controller/metrics/metrics_route.h"
#include "controller/service/listeners.h"
#include "controller/store/sqlite_job_store.h"

namespace ddp::controller {
namespace {

Status makeDirs(const std::string& dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!partial.empty() && ::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
        return unavailable("cannot create " + partial + ": " + std::strerror(errno));
      }
    }
    if (i < dir.size()) partial.push_back(dir[i]);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return invalidArgument(dir + " is not a directory");
  return Status::ok();
}

// The API server: the in-cluster configuration, or --kube-server (development and tests).
Result<kube::KubeConfig> kubeConfigOf(const ControllerConfig& config) {
  kube::KubeConfig c;
  if (config.kubeServer.empty()) {
    DDP_ASSIGN_OR_RETURN(c, kube::inClusterConfig(processConfigEnv()));
  } else {
    c.server = config.kubeServer;
    c.nameSpace = config.watchNamespace.empty() ? "default" : config.watchNamespace;
  }
  return c;
}

// --token-secret: the API token from its Secret in the controller's namespace (Note [Token Secret]).
Result<std::string> tokenFromSecret(const ControllerConfig& config) {
  DDP_ASSIGN_OR_RETURN(kube::KubeConfig kc, kubeConfigOf(config));
  DDP_ASSIGN_OR_RETURN(auto client, kube::KubeClient::create(kc));
  return kube::loadOrCreateTokenSecret(*client, kc.nameSpace, config.tokenSecret);
}

// --launcher kubernetes: the API client, the launcher, leader election and the DDPJob
// reconciler (docs/KUBERNETES.md).
Result<std::unique_ptr<kube::KubernetesRuntime>> startKubernetes(const ControllerConfig& config,
                                                                 const ControllerHooks& hooks,
                                                                 Launcher::ExitCallback onExit) {
  kube::KubernetesRuntimeOptions ko;
  DDP_ASSIGN_OR_RETURN(ko.kube, kubeConfigOf(config));
  ko.nameSpace = config.watchNamespace;
  ko.watchNamespaces = config.watchNamespaces;
  ko.watchAllNamespaces = config.watchAllNamespaces;
  ko.workerImage = config.workerImage;
  ko.schedulerName = config.gangSchedulerName;
  ko.leaseName = config.leaderElectionLease;
  ko.identity = config.podName.empty() ? "ddp-controller-" + std::to_string(::getpid()) : config.podName;
  ko.podName = config.podName;
  ko.onExit = std::move(onExit);
  ko.onLostLeadership = hooks.onLostLeadership;
  return kube::KubernetesRuntime::create(ko);
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// The JobManager's options from the controller's config (`workerUrl`: the workers' listener).
Result<JobManagerOptions> jobManagerOptions(const ControllerConfig& config, const std::string& workerUrl,
                                            ControllerMetrics* metrics) {
  JobManagerOptions jo;
  jo.controllerUrl = config.advertiseUrl.empty() ? workerUrl : config.advertiseUrl;
  jo.persistEvery = config.persistEvery;
  jo.stopGrace = config.stopGrace;
  jo.timings = config.jobTimings;
  jo.workerLogFormat = config.workerLogFormat;
  jo.workerCheckpointDir = config.workerCheckpointDir;
  jo.commThreadPriority = config.commThreadPriority;
  jo.catalogFromDisk = config.launcher == "local";
  std::vector<std::string> roots = config.allowedPathRoots;
  if (roots.empty()) {
    roots = defaultPathRoots(config.stateDir, config.tmpDir.c_str());
    DDP_RETURN_IF_ERROR(makeDirs(roots.front()));  // STATE_DIR/checkpoints
  }
  jo.paths = PathPolicy(roots, config.stateDir);
  jo.workerCommands = config.launcher != "local" || config.allowAnyWorkerCommand
                          ? WorkerCommandPolicy::allowAny()
                          : WorkerCommandPolicy(config.allowedWorkerCommands);
  jo.metrics = metrics;
  return jo;
}

// The DDPJob front end's calls into the jobs; with leader election the jobs start when this
// replica leads (`deferJobs`).
void startKubernetesFrontEnd(kube::KubernetesRuntime& kube, JobManager& jobManager, bool deferJobs) {
  JobManager* jobs = &jobManager;
  kube::JobCalls calls;
  calls.submit = [jobs](const JobSpec& s) { return jobs->submit(s); };
  calls.get = [jobs](const std::string& n) { return jobs->get(n); };
  calls.cancel = [jobs](const std::string& n) { return jobs->cancel(n); };
  calls.remove = [jobs](const std::string& n, Deadline d) { return jobs->remove(n, d); };
  calls.scale = [jobs](const std::string& n, int workers) { return jobs->scale(n, workers, "spec.workers.count"); };
  calls.suspend = [jobs](const std::string& n) { return jobs->suspend(n); };
  calls.resume = [jobs](const std::string& n) { return jobs->resume(n); };
  calls.events = [jobs](const std::string& n) { return jobs->events(n); };
  calls.fail = [jobs](const std::string& n, const std::string& reason, const std::string& message) {
    return jobs->fail(n, reason, message);
  };
  calls.replaceWorkers = [jobs](const std::string& n, const std::vector<std::string>& ids) {
    return jobs->replaceWorkers(n, ids);
  };
  std::function<Status()> onLeading;
  if (deferJobs) onLeading = [jobs] { return jobs->start(); };
  kube.start(
      calls,
      [jobs](const std::string& n) -> std::optional<JobSpec> {
        auto s = jobs->spec(n);
        return s.isOk() ? std::optional<JobSpec>(*s) : std::nullopt;
      },
      std::move(onLeading));
}

}  // namespace

Result<std::string> loadOrCreateToken(const std::string& path, bool create) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    DDP_ASSIGN_OR_RETURN(std::string token, randomHex(32));
    const std::string tmp = path + ".tmp";
    int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) return unavailable("cannot create " + tmp + ": " + std::strerror(errno));
    const std::string line = token + "\n";
    const bool ok = ::write(out, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(out) == 0;
    ::close(out);
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) return unavailable("cannot write the token to " + path);
    return token;
  }
  if (fd < 0) return notFound("cannot read the token file " + path + ": " + std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalidArgument("the token file " + path + " is not a regular file");
  }
  std::string text(4096, '\0');
  ssize_t n = ::read(fd, text.data(), text.size());
  ::close(fd);
  if (n < 0) return unavailable("cannot read the token file " + path);
  text.resize(static_cast<size_t>(n));
  text = trim(text);
  if (text.empty()) return invalidArgument("the token file " + path + " is empty");
  if ((st.st_mode & 077) != 0) return invalidArgument("the token file " + path + " is readable by others (chmod 600 it)");
  return text;
}

struct Controller::Impl {
  ControllerConfig config;
  std::string token, tokenFile;
  std::unique_ptr<SqliteJobStore> store;
  std::unique_ptr<ControllerMetrics> metrics;  // outlives the server and the job manager
  std::unique_ptr<kube::KubernetesRuntime> kube;  // --launcher kubernetes
  std::unique_ptr<Launcher> launcher;
  std::unique_ptr<JobManager> jobs;
  std::unique_ptr<comm::StoreService> storeService;
  std::unique_ptr<ApiServer> api;
  std::unique_ptr<Listeners> listeners;  // Note [Two listeners]

  // Launcher exits may arrive before the job manager exists (re-adoption at start).
  std::mutex exitMu;
  JobManager* exitSink = nullptr;
  std::deque<WorkerExit> earlyExits;

  bool stopped = false;
};

Controller::Controller(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Controller::~Controller() { stop(); }

Result<std::unique_ptr<Controller>> Controller::start(ControllerConfig config, ControllerHooks hooks) {
  DDP_RETURN_IF_ERROR(config.validate());
  auto impl = std::make_unique<Impl>();
  Impl* p = impl.get();
  p->config = config;
  DDP_RETURN_IF_ERROR(makeDirs(config.stateDir));
  if (!config.tokenSecret.empty()) {
    DDP_ASSIGN_OR_RETURN(p->token, tokenFromSecret(config));  // no token file
  } else {
    p->tokenFile = config.tokenFile.empty() ? config.stateDir + "/token" : config.tokenFile;
    DDP_ASSIGN_OR_RETURN(p->token, loadOrCreateToken(p->tokenFile, config.tokenFile.empty()));
  }
  DDP_ASSIGN_OR_RETURN(p->store, SqliteJobStore::open(config.stateDir + "/jobs.db"));

  // The servers first (the worker port is the workers' controller URL); until the routes are
  // installed and the job manager restored its jobs every request gets 503 (which workers
  // retry), not a 404 that a restarted controller's workers would take for "no such job".
  p->storeService = std::make_unique<comm::StoreService>();
  MetricsOptions mo;
  mo.retention = config.metricsRetention;
  p->metrics = std::make_unique<ControllerMetrics>(mo);
  p->listeners = std::make_unique<Listeners>(
      p->config, [p](const http::Request& head) { return p->api ? p->api->bodyLimit(head) : p->config.maxJobBytes; },
      *p->metrics);
  DDP_RETURN_IF_ERROR(p->listeners->start());

  LocalLauncherOptions lo;
  lo.stateDir = config.stateDir;
  lo.workerBinary = config.workerBinary.empty() ? programDir() + "/ddp-worker" : config.workerBinary;
  lo.tieToParent = config.tieWorkersToProcess;
  lo.onExit = [p](const WorkerExit& e) {
    std::lock_guard<std::mutex> lock(p->exitMu);
    if (p->exitSink != nullptr) {
      p->exitSink->onWorkerExit(e);
    } else {
      p->earlyExits.push_back(e);
    }
  };
  if (config.launcher == "external") {
    p->launcher = std::make_unique<ExternalLauncher>();
  } else if (config.launcher == "kubernetes") {
    DDP_ASSIGN_OR_RETURN(p->kube, startKubernetes(config, hooks, lo.onExit));
    p->launcher = p->kube->takeLauncher();
  } else {
    DDP_ASSIGN_OR_RETURN(auto local, LocalLauncher::create(lo));
    p->launcher = std::move(local);
  }

  DDP_ASSIGN_OR_RETURN(JobManagerOptions jo, jobManagerOptions(config, p->listeners->workerUrl(), p->metrics.get()));
  p->jobs = std::make_unique<JobManager>(jo, *p->store, *p->launcher);
  ApiOptions ao;
  ao.maxJobBytes = config.maxJobBytes;
  if (p->kube) ao.standby = [kube = p->kube.get()] { return kube->standby(); };
  p->api = std::make_unique<ApiServer>(ao, p->token, *p->jobs, *p->launcher, *p->storeService);
  p->api->install(p->listeners->publicRouter());
  p->api->installWorkerRoutes(p->listeners->workerRouter());
  observeRequests(p->listeners->workerRouter(), p->metrics.get());
  MetricsRoute mr;
  mr.metrics = p->metrics.get();
  mr.gauges = [p] { return p->jobs->gauges(); };
  mr.token = p->token;
  mr.open = config.metricsOpen;
  installMetricsRoute(p->listeners->publicRouter(), std::move(mr));
  // Note [Standby replicas] (kubernetes_runtime.h): under leader election the jobs start when
  // this replica leads.
  const bool deferJobs = p->kube && p->kube->electsLeader();
  if (!deferJobs) DDP_RETURN_IF_ERROR(p->jobs->start());
  p->listeners->setReady();
  if (p->kube) startKubernetesFrontEnd(*p->kube, *p->jobs, deferJobs);
  {
    std::lock_guard<std::mutex> lock(p->exitMu);
    p->exitSink = p->jobs.get();
    for (const auto& e : p->earlyExits) p->jobs->onWorkerExit(e);
    p->earlyExits.clear();
  }
  return std::unique_ptr<Controller>(new Controller(std::move(impl)));
}


void Controller::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  impl_->listeners->stop();  // no more requests; pending long polls see closed connections
  impl_->api->stop();
  if (impl_->kube) impl_->kube->stop();  // the reconciler calls into the jobs: first
  {
    std::lock_guard<std::mutex> lock(impl_->exitMu);
    impl_->exitSink = nullptr;
  }
  impl_->jobs->stop();
  impl_->launcher.reset();  // its monitor thread; workers keep running unless tied to us
  impl_->kube.reset();      // after the launcher, which uses its API client
}

std::string Controller::url() const { return impl_->listeners->publicUrl(); }
int Controller::port() const { return impl_->listeners->publicPort(); }
std::string Controller::workerUrl() const { return impl_->listeners->workerUrl(); }
int Controller::workerPort() const { return impl_->listeners->workerPort(); }
const std::string& Controller::token() const { return impl_->token; }
const std::string& Controller::tokenFile() const { return impl_->tokenFile; }
JobManager& Controller::jobs() { return *impl_->jobs; }
Launcher& Controller::launcher() { return *impl_->launcher; }

}  // namespace ddp::controller
