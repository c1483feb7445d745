#pragma once
// Test cleanup: SIGKILLs every worker process named in the local launcher's pid files under a
// controller state dir (STATE/jobs/<job>/workers/<id>: "pid=N" lines). Workers of the service
// outlive their controller, so tests that start a controller end its workers by PID with this.
// Thread model: the test's thread.

#include <dirent.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace ddp::test {

inline void killLauncherWorkers(const std::string& stateDir) {
  const std::string jobs = stateDir + "/jobs";
  DIR* d = ::opendir(jobs.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    const std::string wdir = jobs + "/" + e->d_name + "/workers";
    DIR* w = ::opendir(wdir.c_str());
    if (w == nullptr) continue;
    while (dirent* f = ::readdir(w)) {
      std::ifstream in(wdir + "/" + f->d_name);
      std::string kv;
      while (std::getline(in, kv)) {
        if (kv.rfind("pid=", 0) == 0) ::kill(std::atoi(kv.c_str() + 4), SIGKILL);
      }
    }
    ::closedir(w);
  }
  ::closedir(d);
}

// Kills them when it goes out of scope (a test's cleanup, also on a failed assertion).
struct LauncherWorkersKiller {
  std::string stateDir;
  ~LauncherWorkersKiller() { killLauncherWorkers(stateDir); }
};

}  // namespace ddp::test
