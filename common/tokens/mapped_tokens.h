#pragma once
// MappedTokens: the token files of a pattern (token_file.h) memory-mapped read-only, seen as one
// sequence of tokens in expandTokenPaths order. Files are never read whole: the kernel pages in
// what read() touches, so a dataset larger than memory costs only its address space.
// Thread model: read() is const and touches no shared mutable state: any number of threads may
// read at once. open() and the destructor (which unmaps) belong to the owner. A file truncated
// by someone else while it is mapped makes a read of the lost pages fault (SIGBUS): token files
// are written once, atomically (writeTokenFile), and not changed in place.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tokens/token_file.h"

namespace ddp::tokens {

class MappedTokens {
 public:
  // Inspects (inspectTokenSource: the same checks and errors) and maps every file of `pattern`.
  // `rawDType` set: the files are raw, of that dtype (Note [Token file format]).
  static Result<MappedTokens> open(const std::string& pattern, std::optional<TokenDType> rawDType = std::nullopt);

  MappedTokens(MappedTokens&& other) noexcept;
  MappedTokens& operator=(MappedTokens&& other) noexcept;
  MappedTokens(const MappedTokens&) = delete;
  MappedTokens& operator=(const MappedTokens&) = delete;
  ~MappedTokens();

  // Tokens in all files together.
  int64_t size() const { return size_; }
  const std::vector<TokenFileInfo>& files() const { return infos_; }

  // Copies tokens [start, start + n) into out[0, n), across file boundaries. OutOfRange when the
  // range is not inside [0, size()); InvalidArgument when vocabSize is not in [1, 2^31] or a token
  // is >= vocabSize, naming the file and the token's index in it (a corrupt or mismatched
  // dataset: not worth a retry). `out` is written up to the bad token.
  Status read(int64_t start, int64_t n, int64_t vocabSize, int32_t* out) const;

 private:
  struct Mapping {
    const unsigned char* data = nullptr;  // the whole file, header included
    size_t length = 0;                    // mapped bytes (0: nothing mapped)
    int64_t firstToken = 0;               // index of the file's first token in the sequence
  };
  MappedTokens() = default;
  void unmapAll();

  std::vector<TokenFileInfo> infos_;
  std::vector<Mapping> maps_;  // one per file, parallel to infos_
  int64_t size_ = 0;
};

}  // namespace ddp::tokens
