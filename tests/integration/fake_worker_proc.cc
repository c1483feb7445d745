// A stand-in for ddp-worker used by process_supervisor_test: it fakes a training worker's
// observable behaviour (progress on stdout, log lines on stderr, exit status, reaction to
// SIGTERM) without training anything. Behaviour per rank comes from argv:
//   fake_worker_proc <mode for rank 0> <mode for rank 1> ...   (rank from DDP_RANK)
// modes: ok (print and exit 0), fail (exit 3), crash (abort), wait (run until SIGTERM, then
// print "stopped cleanly" and exit 0), stubborn (ignore SIGTERM; killed only by SIGKILL).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {
std::atomic<bool> g_term{false};
void onTerm(int) { g_term.store(true); }
}  // namespace

int main(int argc, char** argv) {
  const char* r = std::getenv("DDP_RANK");
  const int rank = r ? std::atoi(r) : 0;
  const std::string mode = rank + 1 < argc ? argv[rank + 1] : "ok";
  // Before any output, like the real worker: a stop request is never fatal.
  ::signal(SIGTERM, mode == "stubborn" ? SIG_IGN : onTerm);
  std::printf("step 1 rank %d progress\n", rank);
  std::fflush(stdout);
  std::fprintf(stderr, "I fake_worker.cc:1] rank %d info\n", rank);
  std::fprintf(stderr, "[job r%d] W fake_worker.cc:2] rank %d warning\n", rank, rank);
  std::fflush(stderr);
  if (mode == "ok") {
    std::printf("done rank %d\n", rank);
    return 0;
  }
  // Failing modes run a little first, so that the other fake workers are past startup (a
  // SIGTERM that arrives before a process installed its handler terminates it, by design).
  if (mode == "fail" || mode == "crash") std::this_thread::sleep_for(std::chrono::milliseconds(300));
  if (mode == "fail") {
    std::fprintf(stderr, "E fake_worker.cc:3] rank %d: dataset missing\n", rank);
    return 3;
  }
  if (mode == "crash") {
    std::fprintf(stderr, "about to abort\n");
    std::fflush(stderr);
    std::abort();
  }
  for (int i = 0; i < 3000 && !g_term.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!g_term.load()) return 4;  // nobody stopped us within 30 s
  std::printf("rank %d stopped cleanly\n", rank);
  return 0;
}
