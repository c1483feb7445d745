#pragma once
// A temporary directory for one test, removed with everything in it when the object goes away.
// Thread model: a plain value owned by one test.

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace ddp::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "ddp_test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ddp::test
