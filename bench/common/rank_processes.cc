#include "bench/common/rank_processes.h"

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace ddp::bench {

Result<std::vector<std::vector<double>>> runRankProcesses(int world, const RankArgvFn& argvFor,
                                                          const std::string& dir, int fields) {
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> argv = argvFor(r);
    const pid_t pid = fork();
    if (pid == 0) {
      std::vector<char*> cargv;
      for (auto& s : argv) cargv.push_back(s.data());
      cargv.push_back(nullptr);
      setenv("OPENBLAS_NUM_THREADS", "1", 1);
      execv("/proc/self/exe", cargv.data());
      _exit(127);
    }
    if (pid < 0) return unavailable("fork failed");
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  std::vector<std::vector<double>> out;
  for (int r = 0; ok && r < world; ++r) {
    std::ifstream in(dir + "/result_" + std::to_string(r));
    std::vector<double>& row = out.emplace_back(fields);
    for (double& x : row) {
      if (!(in >> x)) ok = false;
    }
  }
  if (!ok) return internalError("a rank failed or wrote no result");
  return out;
}

}  // namespace ddp::bench
