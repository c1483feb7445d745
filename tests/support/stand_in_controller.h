#pragma once
// A real in-process controller (its HTTP listeners on loopback, SQLite job table, local
// launcher) whose "workers" are a shell script that prints its id and sleeps: for tests of the
// API and the HTTP front end that need jobs to exist but no training. Cleanup is the caller's:
// stopStandInController forgets each job through the launcher (which kills its stand-in workers
// by pid), then stops the controller.
// Thread model: the test's thread.

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "controller/jobs/job_manager.h"
#include "controller/launch/launcher.h"
#include "controller/service/controller.h"

namespace ddp::test {

// State in DIR/state; the stand-in worker script in DIR. `configure` changes the rest.
inline Result<std::unique_ptr<controller::Controller>> startStandInController(
    const std::string& dir, const std::function<void(controller::ControllerConfig&)>& configure = nullptr) {
  const std::string fake = dir + "/fake-worker.sh";
  std::ofstream(fake) << "#!/bin/sh\necho \"fake worker $DDP_WORKER_ID\"\nexec sleep 60\n";
  ::chmod(fake.c_str(), 0755);
  controller::ControllerConfig c;
  c.listenPort = 0;
  c.stateDir = dir + "/state";
  c.workerBinary = fake;
  c.stopGrace = std::chrono::seconds(1);
  if (configure) configure(c);
  return controller::Controller::start(c);
}

inline void stopStandInController(controller::Controller& ctl) {
  auto jobs = ctl.jobs().list();
  if (jobs.isOk()) {
    for (const auto& j : *jobs) (void)ctl.launcher().forgetJob(j.name);
  }
  ctl.stop();
}

}  // namespace ddp::test
