#pragma once
// NPY files (numpy.save): the header, checked without reading the data, and a read-only mapping
// of the data (Note [NPY files]).
//
// Note [NPY files]
// An .npy file is the magic "\x93NUMPY", a major and minor version (1.0: a 2-byte little-endian
// header length; 2.0 and 3.0: 4 bytes), then the header, a Python dict literal padded with
// spaces and ending in '\n' -- {'descr': '<f4', 'fortran_order': False, 'shape': (100, 3), } --
// and the array's bytes, exactly prod(shape) x itemsize of them. We read C-order arrays of the
// little-endian types '<f4', '<f8', '<i4', '<i8' and '|u1' (what numpy.save writes on every
// common machine); Fortran order, big-endian, object and other dtypes are refused, naming the
// file and the dtype.
// Thread model: free functions; a MappedNpy is read-only after open() (any thread may read).

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::datafiles {

enum class NpyDType : uint8_t { kF32, kF64, kI32, kI64, kU8 };

const char* npyDTypeName(NpyDType t);  // "<f4", ...
int64_t npyDTypeBytes(NpyDType t);
bool npyDTypeIsFloat(NpyDType t);

struct NpyHeader {
  NpyDType dtype = NpyDType::kF32;
  std::vector<int64_t> shape;  // () for a scalar
  int64_t dataOffset = 0;      // bytes before the array's data
  int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  int64_t count() const;       // prod(shape)
  std::vector<int64_t> trailingShape() const {
    return shape.empty() ? shape : std::vector<int64_t>(shape.begin() + 1, shape.end());
  }
};

// Parses the header of `text` (the bytes after the length field), naming `path` in errors.
Result<NpyHeader> parseNpyHeaderText(const std::string& path, const std::string& text, int64_t dataOffset);
// Reads and checks the header of `path`, and that the file holds exactly the data it announces.
// NotFound (absent), PermissionDenied (unreadable), InvalidArgument naming the file and what is
// wrong (not an NPY file, an unsupported dtype or Fortran order, a size the header disagrees with).
Result<NpyHeader> readNpyHeader(const std::string& path);

// The file of readNpyHeader, mapped read-only.
class MappedNpy {
 public:
  static Result<MappedNpy> open(const std::string& path);
  MappedNpy(MappedNpy&& other) noexcept;
  MappedNpy& operator=(MappedNpy&& other) noexcept;
  MappedNpy(const MappedNpy&) = delete;
  MappedNpy& operator=(const MappedNpy&) = delete;
  ~MappedNpy();

  const std::string& path() const { return path_; }
  const NpyHeader& header() const { return header_; }
  const unsigned char* data() const { return base_ == nullptr ? nullptr : base_ + header_.dataOffset; }
  // Element i of the flattened array converted to double (i < header().count()).
  double at(int64_t i) const;
  // Elements [first, first + n) of the flattened array converted to float (as static_cast from
  // the stored type, through double for '<f8').
  void toFloat(int64_t first, int64_t n, float* out) const;

 private:
  MappedNpy() = default;
  std::string path_;
  NpyHeader header_;
  const unsigned char* base_ = nullptr;
  size_t length_ = 0;
};

}  // namespace ddp::datafiles
