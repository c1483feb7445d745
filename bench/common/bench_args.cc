#include "bench/common/bench_args.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace ddp::bench {

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string ArgReader::value() {
  const std::string name = argv_[i_];
  if (i_ + 1 >= argc_) {
    std::fprintf(stderr, "%s: %s needs a value\n", program_.c_str(), name.c_str());
    std::exit(2);
  }
  return argv_[++i_];
}

std::string programDir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

}  // namespace ddp::bench
