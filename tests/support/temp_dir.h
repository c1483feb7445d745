#pragma once
// A temporary directory for one test, removed with everything in it when the object goes away.
// The one TempDir of the tests (header-only, so tests that link only the controller or the spec
// library use it too).
// Thread model: a plain value owned by one test.

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace ddp::test {

class TempDir {
 public:
  // Under the system's temporary directory, named PREFIX_XXXXXX. Throws (failing the test with
  // the reason) when it cannot be made.
  explicit TempDir(const std::string& prefix = "ddp_test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
    }
    path_ = tmpl;
  }
  ~TempDir() {
    if (kept_) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Leaves the directory in place when the object goes away (to look into a failed run).
  void keep() { kept_ = true; }
  // PATH/NAME (nothing is created).
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `contents` to PATH/NAME (binary, replacing it) and returns that path.
  std::string write(const std::string& name, const std::string& contents) const {
    const std::string p = file(name);
    std::ofstream(p, std::ios::binary | std::ios::trunc) << contents;
    return p;
  }

 private:
  std::string path_;
  bool kept_ = false;
};

}  // namespace ddp::test
