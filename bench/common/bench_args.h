#pragma once
// Small helpers every bench_* program's command line uses.
// Thread model: pure functions.

#include <string>
#include <vector>

namespace ddp::bench {

// "a,b,,c" -> {"a", "b", "c"} (empty items dropped).
std::vector<std::string> splitList(const std::string& s);
// The directory of the running executable (where ddp-worker and ddp-controller sit beside it);
// "." when /proc/self/exe cannot be read.
std::string programDir();

}  // namespace ddp::bench
