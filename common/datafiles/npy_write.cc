#include "common/datafiles/npy_write.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace ddp::datafiles {

std::string encodeNpy(NpyDType dtype, const std::vector<int64_t>& shape, const void* data) {
  std::string dims;
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    dims += (i ? ", " : "") + std::to_string(shape[i]);
    count *= shape[i];
  }
  if (shape.size() == 1) dims += ",";
  std::string header = std::string("{'descr': '") + npyDTypeName(dtype) + "', 'fortran_order': False, 'shape': (" +
                       dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(data), static_cast<size_t>(count * npyDTypeBytes(dtype)));
  return out;
}

Status writeNpy(const std::string& path, NpyDType dtype, const std::vector<int64_t>& shape, const void* data) {
  const std::string bytes = encodeNpy(dtype, shape, data);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return unavailable("cannot write " + path + ": " + std::strerror(errno));
  return Status::ok();
}

}  // namespace ddp::datafiles
