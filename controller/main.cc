// ddp-controller: the training service. All logic lives in controller/ (service/controller.h).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/log.h"
#include "controller/service/controller.h"

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
  auto controller = Controller::start(*config);
  if (!controller.isOk()) {
    std::fprintf(stderr, "ddp-controller: %s\n", controller.status().toString().c_str());
    return 1;
  }
  std::printf("listening on %s\n", (*controller)->url().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stopSignals, &sig);
  std::fprintf(stderr, "ddp-controller: %s: stopping (running workers keep running)\n", ::strsignal(sig));
  (*controller)->stop();
  return 0;
}
