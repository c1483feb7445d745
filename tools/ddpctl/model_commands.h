#pragma once
// ddpctl's commands on a job's trained model, run on this machine: export, predict, generate
// (export_command.h, predict_command.h, generate_command.h; the checkpoint they read:
// checkpoint_source.h).
// Thread model: runs on the calling thread.

#include <iosfwd>
#include <string>
#include <vector>

namespace ddp::ddpctl {

bool isModelCommand(const std::string& name);
// The command's usage; "" for a name that is not one.
std::string modelCommandUsage(const std::string& name);
// Runs model command `name` on `args` (everything after the command's name, the controller
// options included); -h/--help prints its usage. Returns the exit status.
int modelCommand(const std::string& name, const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ddp::ddpctl
