#include "controller/service/listeners.h"

#include <fstream>

#include "controller/api/api_server.h"

// Note [Two listeners]
// Every connection once shared one budget (8192): half-sent requests from an anonymous client
// (a header byte every few seconds) are not idle, so they are not evicted, and once they filled
// the budget the workers' heartbeats got 503 and a healthy job was failed as Unresponsive. So the
// workers get a listener of their own (--worker-listen; its own Service port on Kubernetes), told
// to them as DDP_CONTROLLER_URL, with the health probes beside them: a flooded public port
// neither starves a heartbeat nor fails the kubelet's probes. The worker listener has no cap per
// client address (it serves thousands of workers from few addresses: several ranks per pod, a
// node's NAT); the public one does (--max-connections-per-client), so that one address cannot
// take the public budget either. The public listener still answers the worker routes (older
// workers and tools that know only one URL), but the controller gives workers the worker URL.
// Connections a server ends itself (a cap, a 408, a malformed request) are counted in
// ddp_http_connections_dropped_total{listener, reason}.

namespace ddp::controller {

std::string workerPortFile(const std::string& stateDir) { return stateDir + "/worker-port"; }

namespace {

std::string urlOf(const std::string& host, int port) {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return "http://" + h + ":" + std::to_string(port);
}

int recordedWorkerPort(const std::string& stateDir) {
  std::ifstream in(workerPortFile(stateDir));
  int port = 0;
  return (in >> port) && port > 0 && port <= 65535 ? port : 0;
}

}  // namespace

Listeners::Listeners(const ControllerConfig& config, std::function<size_t(const http::Request&)> bodyLimit,
                     MetricsSink& metrics)
    : config_(config), bodyLimit_(std::move(bodyLimit)), metrics_(metrics) {}

Listeners::~Listeners() { stop(); }

std::unique_ptr<http::Server> Listeners::makeServer(const std::string& host, int port, http::Router& router,
                                                    const char* listener, size_t perClient) {
  http::ServerOptions so;
  so.host = host;
  so.port = port;
  so.handlerThreads = config_.handlerThreads;
  so.maxBodyBytes = config_.maxJobBytes;
  so.maxConnectionsPerClient = perClient;
  so.requestTimeout = config_.requestTimeout;
  so.bodyLimit = bodyLimit_;
  // The worker routes never block (short locks, then a reply or a kept long poll): they run on
  // the event loop itself, which at thousands of heartbeats a second saves most of the
  // controller's CPU (two thread hand-offs per request).
  so.runInline = [](const http::Request& req) { return isWorkerRoute(req); };
  MetricsSink* metrics = &metrics_;
  const std::string name = listener;
  so.onDropped = [metrics, name](const char* reason) { metrics->httpDropped(name, reason); };
  return std::make_unique<http::Server>(so, [this, &router](http::Request& req, std::shared_ptr<http::Responder> res) {
    if (!ready_.load()) {
      res->reply(http::Response::jsonError(503, "the controller is starting"));
      return;
    }
    router.handle(req, std::move(res));
  });
}

Status Listeners::start() {
  publicServer_ = makeServer(config_.listenHost, config_.listenPort, public_, "public", config_.maxConnectionsPerClient);
  DDP_RETURN_IF_ERROR(publicServer_->start());
  int port = config_.workerListenPort;
  const int recorded = port == 0 ? recordedWorkerPort(config_.stateDir) : 0;
  if (recorded > 0) port = recorded;
  workerServer_ = makeServer(workerHost(), port, worker_, "worker", 0);
  if (Status st = workerServer_->start(); !st.isOk()) {
    if (recorded == 0) return st;
    return Status(st.code(), st.message() + " (the worker port recorded in " + workerPortFile(config_.stateDir) +
                                 " by an earlier start: the running workers know it)");
  }
  std::ofstream(workerPortFile(config_.stateDir)) << workerServer_->port() << "\n";
  return Status::ok();
}

void Listeners::stop() {
  if (publicServer_) publicServer_->stop();
  if (workerServer_) workerServer_->stop();
}

std::string Listeners::publicUrl() const { return urlOf(config_.listenHost, publicServer_->port()); }
int Listeners::publicPort() const { return publicServer_->port(); }
std::string Listeners::workerUrl() const { return urlOf(workerHost(), workerServer_->port()); }
std::string Listeners::workerHost() const {
  return config_.workerListenHost.empty() ? config_.listenHost : config_.workerListenHost;
}
int Listeners::workerPort() const { return workerServer_->port(); }

}  // namespace ddp::controller
