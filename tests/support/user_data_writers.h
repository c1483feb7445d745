#pragma once
// Writers of a user's data files for tests (header-only, so the controller's tests use them
// too): NPY arrays written by the format's definition (Note [NPY files] in
// common/datafiles/npy_file.h), IDX files (big-endian header, gzip through zlib or plain), text.
// Thread model: plain functions.

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace ddp::test {

// An .npy file of `descr` and `shape` holding `data` (bytes, written as they are).
inline void writeNpyBytes(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape,
                          const std::string& data, bool fortranOrder = false) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortranOrder ? "True" : "False") +
                       ", 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char lenBytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(lenBytes, 2);
  out << header;
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

template <typename T>
void writeNpy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape,
              const std::vector<T>& values) {
  writeNpyBytes(path, descr, shape, std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
}

// An IDX file of unsigned bytes: dims then data; gzip-compressed or plain.
inline void writeIdx(const std::string& path, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data,
                     bool gzip) {
  std::string bytes = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) bytes += static_cast<char>((d >> s) & 0xff);
  }
  bytes.append(reinterpret_cast<const char*>(data.data()), data.size());
  if (!gzip) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return;
  }
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

inline void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

}  // namespace ddp::test
