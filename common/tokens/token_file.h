#pragma once
// Token files: the llm.c format and raw token files, and the cheap checks the controller runs on
// a job's token source at submission (no file is read whole here; see mapped_tokens.h for the
// reader the workers use).
//
// Note [Token file format]
// An llm.c token file is a header of 256 little-endian int32 (1024 bytes): header[0] = the magic
// 20240520, header[1] = the version (1: uint16 tokens, 2: uint32 tokens), header[2] = the token
// count, the rest zero; then the tokens, little-endian, exactly header[2] of them (a file longer
// or shorter than that is refused: it was truncated or is not what its header says). A raw file
// has no header: it is only tokens, of a dtype the job declares (uint16 | uint32), so its size
// must be a whole number of tokens. Declaring a dtype means "raw": a file that starts with the
// llm.c magic is then refused rather than read with its header as tokens.
// Thread model: free functions, no shared state.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ddp::tokens {

inline constexpr int32_t kTokenFileMagic = 20240520;
inline constexpr int kTokenHeaderInts = 256;
inline constexpr int64_t kTokenHeaderBytes = kTokenHeaderInts * 4;

// The width of one token on disk; the value is the llm.c header version that announces it.
enum class TokenDType : uint8_t { kUint16 = 1, kUint32 = 2 };

const char* tokenDTypeName(TokenDType dtype);  // "uint16", "uint32"
// "uint16" | "uint32"; InvalidArgument naming the text otherwise.
Result<TokenDType> parseTokenDType(std::string_view name);
int64_t tokenDTypeBytes(TokenDType dtype);  // 2 or 4
uint64_t tokenDTypeMax(TokenDType dtype);   // the largest token the dtype holds

struct TokenFileInfo {
  std::string path;
  TokenDType dtype = TokenDType::kUint16;
  int64_t tokens = 0;
  int64_t headerBytes = 0;  // kTokenHeaderBytes for an llm.c file, 0 for a raw one
  bool operator==(const TokenFileInfo&) const = default;
};

// The files a pattern names: a path, or a glob(3) pattern (*, ?, [...]), sorted bytewise.
// NotFound naming the pattern when nothing matches; InvalidArgument naming a directory that it
// names or matches.
Result<std::vector<std::string>> expandTokenPaths(const std::string& pattern);

// Cheap checks of one file (Note [Token file format]): it exists and is readable, the header's
// magic and version, and the file's size against the token count (or, raw, a whole number of
// tokens). `rawDType` set: the file is raw, of that dtype. Every error names the file and what
// is wrong: NotFound (absent), PermissionDenied (unreadable), InvalidArgument (not a token file
// of that kind, or its size disagrees).
Result<TokenFileInfo> inspectTokenFile(const std::string& path,
                                       std::optional<TokenDType> rawDType = std::nullopt);
// inspectTokenFile of every file of the pattern, in expandTokenPaths order.
Result<std::vector<TokenFileInfo>> inspectTokenSource(const std::string& pattern,
                                                      std::optional<TokenDType> rawDType = std::nullopt);
// inspectTokenSource, and the files together hold at least one window of `windowTokens`
// (contextLength + 1) tokens: InvalidArgument naming the pattern otherwise.
Status checkTokenSource(const std::string& pattern, std::optional<TokenDType> rawDType, int64_t windowTokens);

// Writes `tokens` as an llm.c token file of `dtype`, atomically (a temporary file in the same
// directory, fsynced and renamed over `path`): a reader sees the old file or the whole new one.
// InvalidArgument (nothing written) for a token outside [0, tokenDTypeMax(dtype)] or more tokens
// than the header's int32 count holds; Unavailable naming the file for an I/O error.
Status writeTokenFile(const std::string& path, std::span<const int32_t> tokens, TokenDType dtype);

}  // namespace ddp::tokens
