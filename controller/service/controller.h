#pragma once
// Controller: ddp-controller's parts wired together (docs/CONTROLLER.md): the state dir, the
// API token, the SQLite job store, the local launcher, the job manager, the store service and
// two HTTP servers: the public one with the API routes, and the workers' (listeners.h). Used by ddp-controller's main, in process by
// `ddpctl run`, and by tests.
// Thread model: start() and stop() from one thread; the parts run their own threads (the HTTP
// event loop and handlers, the job manager's ticker, the launcher's monitor, log followers);
// stop() joins them all. Running workers are not stopped by stop() (unless the config ties them
// to this process).

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "controller/service/controller_config.h"

namespace ddp::controller {

class JobManager;
class Launcher;

// What the embedding program decides (ddp-controller's main, tests), not configuration.
struct ControllerHooks {
  // --launcher kubernetes with leader election: this replica lost the lease (Note [Fencing on
  // leadership loss] in kubernetes_runtime.h). Runs on the leader elector's thread; main exits
  // the process non-zero. Unset: the reconciler stops, the rest keeps running.
  std::function<void()> onLostLeadership;
};

class Controller {
 public:
  static Result<std::unique_ptr<Controller>> start(ControllerConfig config, ControllerHooks hooks = {});
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  void stop();

  std::string url() const;             // "http://host:port" as bound: the public (user) listener
  int port() const;
  std::string workerUrl() const;       // the workers' listener (Note [Two listeners])
  int workerPort() const;
  const std::string& token() const;    // the controller (user API) token
  const std::string& tokenFile() const;  // "" with --token-secret
  JobManager& jobs();
  Launcher& launcher();

  struct Impl;

 private:
  explicit Controller(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Reads the token from `path`, or creates it there (256 random bits as hex, mode 0600) when the
// file does not exist. InvalidArgument when it exists but is empty or readable by others.
Result<std::string> loadOrCreateToken(const std::string& path, bool create);

}  // namespace ddp::controller
