#pragma once
// ControllerLoadProcess: one ddp-controller child process for bench_controller, on 127.0.0.1 with
// a fresh state directory and `--launcher external` (it starts no workers; simulated ones join).
// start() waits for its "listening on http://HOST:PORT" line and reads STATE_DIR/token; stop()
// (also the destructor) sends SIGTERM, SIGKILL after the grace period, reaps the child and
// removes the temporary directory. The child gets PR_SET_PDEATHSIG(SIGKILL), so it also dies
// when the benchmark is killed. Its stdout/stderr go to files in the temporary directory
// (logTail() shows the end of stderr for error messages).
// Thread model: starts no thread; use from one thread.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "bench/common/temp_dir.h"
#include "common/status.h"

namespace ddp::bench {

struct ControllerLoadOptions {
  std::string binary;                         // path of ddp-controller
  std::vector<std::string> extraArgs;         // appended to the command line
  Duration startTimeout = std::chrono::seconds(15);
  Duration stopGrace = std::chrono::seconds(5);  // SIGTERM .. SIGKILL
};

class ControllerLoadProcess {
 public:
  static Result<std::unique_ptr<ControllerLoadProcess>> start(const ControllerLoadOptions& options);
  ~ControllerLoadProcess();
  ControllerLoadProcess(const ControllerLoadProcess&) = delete;
  ControllerLoadProcess& operator=(const ControllerLoadProcess&) = delete;

  // SIGTERM, then SIGKILL after stopGrace; reaps; removes the temporary directory. Idempotent.
  // Not ok when the controller had to be killed or had exited on its own with an error.
  Status stop();

  pid_t pid() const { return pid_; }
  const std::string& host() const { return host_; }
  int port() const { return port_; }
  int workerPort() const { return workerPort_; }  // the worker listener (simulated workers use it)
  std::string hostPort() const { return host_ + ":" + std::to_string(port_); }
  const std::string& token() const { return token_; }      // the controller (user API) token
  const std::string& stateDir() const { return stateDir_; }
  // utime + stime of the controller (all its threads) from /proc/PID/stat.
  Result<double> cpuSeconds() const;
  // The last `bytes` of the controller's stderr.
  std::string logTail(size_t bytes = 2000) const;

 private:
  explicit ControllerLoadProcess(ControllerLoadOptions options) : options_(std::move(options)) {}
  Status spawn();
  Status awaitListening(Deadline deadline);
  bool reapIfExited(int* status);

  const ControllerLoadOptions options_;
  TempDir tmpDir_;  // its stdout, stderr and state; removed by stop()
  std::string stateDir_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int exitStatus_ = 0;
  std::string host_;
  int port_ = 0;
  int workerPort_ = 0;
  std::string token_;
};

}  // namespace ddp::bench
