#pragma once
// `ddpctl export (JOB | --checkpoint-dir DIR) [-o FILE] [--step N]`: a checkpoint's model as a
// safetensors file under PyTorch's names (docs/MODELS.md, "Exported models").
// Thread model: runs on the calling thread.

#include <iosfwd>
#include <string>
#include <vector>

namespace ddp::ddpctl {

std::string exportUsage();
// `args`: everything after "export", the controller options included. Returns the exit status
// (0 written, 1 failed, 2 bad arguments).
int exportCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ddp::ddpctl
