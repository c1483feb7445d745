// ddpctl: the command-line client. `run` is the embedded local mode (run_command.h), `tokenize`
// writes a language model's token files (tokenize_command.h); the other commands talk to a
// running ddp-controller (client_commands.h).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "tools/ddpctl/client_commands.h"
#include "tools/ddpctl/model_commands.h"
#include "tools/ddpctl/render_command.h"
#include "tools/ddpctl/run_command.h"
#include "tools/ddpctl/tokenize_command.h"

namespace {

std::string usage() {
  return "usage: ddpctl [options] COMMAND [args]\n"
         "\n"
         "on this machine:\n"
         "  run JOB.yaml        train the job here (local workers, embedded store)\n"
         "  tokenize --bytes FILE... -o DIR\n"
         "                      text files to token files (train.bin, val.bin)\n"
         "  export (JOB | --checkpoint-dir DIR) [-o FILE] [--step N]\n"
         "                      a checkpoint's model as safetensors (PyTorch names)\n"
         "  predict (JOB | --checkpoint-dir DIR) --input FILE.npy [-o OUT.npy]\n"
         "                      run a checkpoint's model on samples (CPU)\n"
         "  generate (JOB | --checkpoint-dir DIR) (--prompt TEXT | --prompt-tokens IDS)\n"
         "                      sample text from a checkpoint's GPT (CPU)\n"
         "  render JOB.yaml [--worker-image IMAGE] [--watch-namespace NS]\n"
         "                      the Kubernetes objects the controller would create for the job\n"
         "\n"
         "with a controller:\n" +
         ddp::ddpctl::clientCommandsSummary() + "\n" + ddp::ddpctl::clientGlobalOptionsUsage() +
         "\n"
         "exit status: 0 ok, 1 failed (request refused, job not found or the watched job\n"
         "Failed), 2 bad arguments or invalid job, 3 the watched job was Cancelled.\n"
         "`ddpctl COMMAND --help` for a command's options.\n";
}

}  // namespace

int main(int argc, char** argv) {
  namespace ctl = ddp::ddpctl;
  std::vector<std::string> args(argv + 1, argv + argc);
  // The client's global options may come before the command.
  size_t at = 0;
  while (size_t n = ctl::clientOptionLength(args, at)) at += n;
  if (at == args.size() || args[at] == "-h" || args[at] == "--help" || args[at] == "help") {
    if (at + 1 < args.size() && args[at] == "help") {  // ddpctl help COMMAND
      const std::string& topic = args[at + 1];
      if (topic == "run") {
        std::fputs(ctl::runUsage().c_str(), stdout);
        return ctl::kExitOk;
      }
      if (const auto usage = ctl::modelCommandUsage(topic); !usage.empty()) {
        std::fputs(usage.c_str(), stdout);
        return ctl::kExitOk;
      }
      if (topic == "tokenize") {
        std::fputs(ctl::tokenizeUsage().c_str(), stdout);
        return ctl::kExitOk;
      }
      if (topic == "render") {
        std::fputs(ctl::renderUsage().c_str(), stdout);
        return ctl::kExitOk;
      }
      if (ctl::isClientCommand(topic)) {
        std::fputs(ctl::clientCommandUsage(topic).c_str(), stdout);
        return ctl::kExitOk;
      }
    }
    const bool asked = at < args.size();
    std::fputs(usage().c_str(), asked ? stdout : stderr);
    return asked ? ctl::kExitOk : ctl::kExitUsage;
  }
  const std::string cmd = args[at];
  std::vector<std::string> rest(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(at));
  rest.insert(rest.end(), args.begin() + static_cast<std::ptrdiff_t>(at) + 1, args.end());
  if (cmd == "run") {
    if (at > 0) {
      std::fprintf(stderr, "ddpctl run: --server, --token-file and --timeout are for the controller "
                           "commands (run trains on this machine)\n");
      return ctl::kExitUsage;
    }
    return ctl::runCommand(rest);
  }
  if (cmd == "tokenize") {
    if (at > 0) {
      std::fprintf(stderr, "ddpctl tokenize: --server, --token-file and --timeout are for the controller "
                           "commands (tokenize works on local files)\n");
      return ctl::kExitUsage;
    }
    return ctl::tokenizeCommand(rest, std::cout, std::cerr);
  }
  if (cmd == "render") {
    if (at > 0) {
      std::fprintf(stderr, "ddpctl render: --server, --token-file and --timeout are for the controller "
                           "commands (render needs no controller)\n");
      return ctl::kExitUsage;
    }
    return ctl::renderCommand(rest, std::cout, std::cerr);
  }
  if (ctl::isModelCommand(cmd)) return ctl::modelCommand(cmd, rest, std::cout, std::cerr);
  if (ctl::isClientCommand(cmd)) return ctl::runClientCommand(cmd, std::move(rest), ctl::processClientIo());
  std::fprintf(stderr, "ddpctl: unknown command '%s'\n%s", cmd.c_str(), usage().c_str());
  return ctl::kExitUsage;
}
