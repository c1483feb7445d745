#pragma once
// TempDir: a temporary directory a benchmark owns, removed with everything in it when the object
// goes away (or on remove()). The benchmarks' one maker of temporary directories; the tests have
// their own (tests/support/temp_dir.h), which throws, where a benchmark reports a Status.
// Thread model: a plain value owned by one thread.

#include <string>

#include "common/status.h"

namespace ddp::bench {

class TempDir {
 public:
  // A fresh directory NAME.XXXXXX under the system's temporary directory ($TMPDIR or /tmp).
  // Unavailable, naming the template and the reason, when it cannot be made.
  static Result<TempDir> make(const std::string& name);

  TempDir() = default;  // none: path() is empty
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() { remove(); }

  const std::string& path() const { return path_; }
  // Removes the directory now (errors ignored: it is scratch space); path() is empty afterwards.
  void remove();

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace ddp::bench
