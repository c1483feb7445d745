// ddp-controller: the training service. All logic lives in controller/ (service/controller.h).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/log.h"
#include "controller/service/controller.h"

namespace {
constexpr int kExitLostLeadership = 3;  // 1: could not start; 2: bad flags
}  // namespace

int main(int argc, char** argv) {
  using namespace ddp;
  using namespace ddp::controller;
  auto config = parseControllerConfig(std::vector<std::string>(argv + 1, argv + argc), processConfigEnv());
  if (!config.isOk()) {
    if (config.status().code() == StatusCode::kNotFound) {
      std::fputs(config.status().message().c_str(), stdout);
      return 0;
    }
    std::fprintf(stderr, "ddp-controller: %s\n", config.status().message().c_str());
    return 2;
  }
  log::setLevel(config->logLevel);
  // SIGTERM / SIGINT are taken synchronously by this thread; every other thread blocks them.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  ControllerHooks hooks;
  // Note [Fencing on leadership loss] (kubernetes_runtime.h): a replica that lost the lease
  // exits at once, without stopping anything, so Kubernetes restarts it as a standby.
  hooks.onLostLeadership = [] {
    DDP_LOG(Error) << "ddp-controller: lost leadership: exiting (status " << kExitLostLeadership
                   << ") so that Kubernetes restarts this replica as a standby";
    std::fflush(nullptr);
    ::_exit(kExitLostLeadership);
  };
  auto controller = Controller::start(*config, hooks);
  if (!controller.isOk()) {
    std::fprintf(stderr, "ddp-controller: %s\n", controller.status().toString().c_str());
    return 1;
  }
  std::printf("listening on %s\n", (*controller)->url().c_str());
  std::printf("workers on %s\n", (*controller)->workerUrl().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stopSignals, &sig);
  std::fprintf(stderr, "ddp-controller: %s: stopping (running workers keep running)\n", ::strsignal(sig));
  (*controller)->stop();
  return 0;
}
