#pragma once
// An independent writer and reader of token files for the tests (Note [Token file format] in
// common/tokens/token_file.h), written from the format's description with plain byte strings and
// fread, sharing no code with common/tokens: the oracle the library is checked against.
// Thread model: free functions; each test uses its own files.

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace ddp::test {

inline std::string le32(int64_t v) {
  const auto u = static_cast<uint32_t>(v);
  return {char(u & 0xff), char((u >> 8) & 0xff), char((u >> 16) & 0xff), char((u >> 24) & 0xff)};
}
inline std::string le16(int64_t v) {
  const auto u = static_cast<uint16_t>(v);
  return {char(u & 0xff), char((u >> 8) & 0xff)};
}

// A 1024-byte llm.c header with these first three ints, the rest zero.
inline std::string llmcHeader(int64_t magic, int64_t version, int64_t count) {
  std::string h = le32(magic) + le32(version) + le32(count);
  h.resize(1024, '\0');
  return h;
}

// Tokens as bytes: 2 bytes each (width 2) or 4 (width 4), little-endian.
inline std::string tokenBytes(const std::vector<int64_t>& tokens, int width) {
  std::string s;
  for (int64_t t : tokens) s += width == 2 ? le16(t) : le32(t);
  return s;
}

inline std::string writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// A well-formed llm.c file: version 1 (uint16) or 2 (uint32).
inline std::string writeLlmcByHand(const std::string& path, const std::vector<int64_t>& tokens, int version) {
  return writeBytes(path, llmcHeader(20240520, version, static_cast<int64_t>(tokens.size())) +
                              tokenBytes(tokens, version == 1 ? 2 : 4));
}

struct HandReadFile {
  int32_t header[256] = {};
  std::vector<int64_t> tokens;  // as many as the rest of the file holds, of the header's width
};

// Reads an llm.c file with fread: the 256 header ints, then every token after them, of width 2
// (version 1) or 4 (else). nullopt when the file cannot be opened or is shorter than a header.
inline std::optional<HandReadFile> readLlmcByHand(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::nullopt;
  HandReadFile r;
  const size_t got = std::fread(r.header, 4, 256, f);
  if (got != 256) {
    std::fclose(f);
    return std::nullopt;
  }
  const int width = r.header[1] == 1 ? 2 : 4;
  unsigned char b[4];
  while (std::fread(b, 1, static_cast<size_t>(width), f) == static_cast<size_t>(width)) {
    int64_t v = b[0] | (b[1] << 8);
    if (width == 4) v |= (int64_t{b[2]} << 16) | (int64_t{b[3]} << 24);
    r.tokens.push_back(v);
  }
  std::fclose(f);
  return r;
}

}  // namespace ddp::test
