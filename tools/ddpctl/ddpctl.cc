// ddpctl: the command-line client. `run` is the embedded local mode; the controller-backed
// subcommands are listed but not available in this build.
#include <cstdio>
#include <string>
#include <vector>

#include "tools/ddpctl/run_command.h"

namespace {

constexpr const char* kControllerCommands[] = {"submit", "get", "describe", "logs", "cancel", "checkpoints"};

std::string usage() {
  return "usage: ddpctl COMMAND [args]\n"
         "\n"
         "commands:\n"
         "  run JOB.yaml     train the job on this machine (local workers, embedded store)\n"
         "  submit JOB.yaml  submit the job to a controller        (needs the controller)\n"
         "  get [NAME]       list jobs or show one                  (needs the controller)\n"
         "  describe NAME    a job's status, conditions and events  (needs the controller)\n"
         "  logs NAME        a job's worker logs                    (needs the controller)\n"
         "  cancel NAME      stop a job                             (needs the controller)\n"
         "  checkpoints NAME list a job's checkpoints               (needs the controller)\n"
         "\n"
         "`ddpctl run --help` for the options of run.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(usage().c_str(), args.empty() ? stderr : stdout);
    return args.empty() ? ddp::ddpctl::kExitUsage : ddp::ddpctl::kExitOk;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "run") return ddp::ddpctl::runCommand(args);
  for (const char* c : kControllerCommands) {
    if (cmd == c) {
      std::fprintf(stderr, "ddpctl %s: not available in this build: needs the controller "
                           "(use `ddpctl run JOB.yaml` to train on this machine)\n", c);
      return ddp::ddpctl::kExitUsage;
    }
  }
  std::fprintf(stderr, "ddpctl: unknown command '%s'\n%s", cmd.c_str(), usage().c_str());
  return ddp::ddpctl::kExitUsage;
}
