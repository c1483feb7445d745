#pragma once
// Listeners: the controller's two HTTP servers (Note [Two listeners] in listeners.cc). The public
// one serves users (the job API, /metrics) with a connection cap per client address; the worker
// one serves the workers' routes and the health probes, with a connection budget of its own, so
// that no anonymous client can starve the workers' heartbeats (or get the controller restarted
// by failing the kubelet's probes).
// Thread model: start() and stop() from one thread; each server runs its own event loop and
// handler threads; the routers are filled before start() and only read afterwards.

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "common/http/http_router.h"
#include "common/http/http_server.h"
#include "common/status.h"
#include "controller/metrics/metrics_sink.h"
#include "controller/service/controller_config.h"

namespace ddp::controller {

class Listeners {
 public:
  // `bodyLimit` per request (job documents, store values); `metrics` counts the connections each
  // server ends itself. Both must outlive the servers.
  Listeners(const ControllerConfig& config, std::function<size_t(const http::Request&)> bodyLimit,
            MetricsSink& metrics);
  ~Listeners();  // stop()

  http::Router& publicRouter() { return public_; }
  http::Router& workerRouter() { return worker_; }
  // Until setReady(), every request on either listener gets 503 "starting" (which workers retry).
  void setReady() { ready_ = true; }

  // Binds both. The worker port: the configured one, else the one recorded in the state dir by
  // an earlier start (the port the running workers know), else one the OS picks (then recorded).
  Status start();
  void stop();

  std::string publicUrl() const;  // "http://host:port" as bound
  int publicPort() const;
  std::string workerUrl() const;
  int workerPort() const;

 private:
  std::string workerHost() const;  // --worker-listen's host, else --listen's
  std::unique_ptr<http::Server> makeServer(const std::string& host, int port, http::Router& router,
                                           const char* listener, size_t perClient);

  const ControllerConfig& config_;
  std::function<size_t(const http::Request&)> bodyLimit_;
  MetricsSink& metrics_;
  http::Router public_, worker_;
  std::unique_ptr<http::Server> publicServer_, workerServer_;
  std::atomic<bool> ready_{false};
};

// STATE_DIR/worker-port: the worker listener's port, kept across restarts.
std::string workerPortFile(const std::string& stateDir);

}  // namespace ddp::controller
