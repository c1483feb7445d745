#pragma once
// Small helpers every bench_* program's command line uses.
// Thread model: pure functions.

#include <string>
#include <vector>

namespace ddp::bench {

// "a,b,,c" -> {"a", "b", "c"} (empty items dropped).
std::vector<std::string> splitList(const std::string& s);
// Walks a command line: `for (ArgReader a(argc, argv, "bench_x"); a.next();) { if (a.flag() ==
// "--n") n = std::atoi(a.value().c_str()); ... }`. value() takes the argument after the flag,
// or prints "<program>: <flag> needs a value" and exits 2.
class ArgReader {
 public:
  ArgReader(int argc, char** argv, std::string program) : argc_(argc), argv_(argv), program_(std::move(program)) {}
  bool next() { return ++i_ < argc_; }
  const std::string& flag() { return flag_ = argv_[i_]; }
  std::string value();

 private:
  int argc_;
  char** argv_;
  std::string program_;
  std::string flag_;
  int i_ = 0;
};

// The directory of the running executable (where ddp-worker and ddp-controller sit beside it);
// "." when /proc/self/exe cannot be read.
std::string programDir();

}  // namespace ddp::bench
