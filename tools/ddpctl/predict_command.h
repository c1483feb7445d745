#pragma once
// `ddpctl predict (JOB | --checkpoint-dir DIR) --input FILE.npy [-o out.npy] [--step N]`: a
// checkpoint's model run on this machine's CPU over the user's samples (docs/MODELS.md,
// "Predict and generate"). A classifier reads features (N, ...) (float32, float64, uint8, int32
// or int64; each sample's values in C order, as many as the model's input), standardized as
// the checkpoint's data was, and writes its logits (N, classes) as float32; a GPT reads token
// windows (N, contextLength) of integers and writes the logits (N, contextLength, vocab).
// Thread model: runs on the calling thread.

#include <iosfwd>
#include <string>
#include <vector>

namespace ddp::ddpctl {

std::string predictUsage();
// Exit status: 0 written, 1 failed, 2 bad arguments or input.
int predictCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ddp::ddpctl
