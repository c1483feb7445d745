#pragma once
// `ddpctl tokenize --bytes FILE... -o DIR [--val-fraction F]`: turns text files into the llm.c
// token files a language-model job reads (common/tokens/token_file.h): the bytes of the files,
// concatenated in the order given, one token per byte (vocabulary 256); the last F of them go
// to DIR/val.bin, the rest to DIR/train.bin (version 1: uint16 tokens), each written atomically.
// Runs in-process: it takes its arguments and two streams and returns the exit status; nothing
// here calls exit() or writes to the process's streams.
// Thread model: the calling thread; starts no threads.

#include <iosfwd>
#include <string>
#include <vector>

namespace ddp::ddpctl {

inline constexpr double kDefaultValFraction = 0.1;

// args: everything after "tokenize". Returns kExitOk, kExitFailed (a file could not be read or
// written) or kExitUsage (bad arguments), the statuses of run_command.h.
int tokenizeCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
std::string tokenizeUsage();

}  // namespace ddp::ddpctl
