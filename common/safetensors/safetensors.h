#pragma once
// Safetensors files: a model's named tensors in the format PyTorch users load with
// `safetensors.torch.load_file` (Note [Safetensors format]).
//
// Note [Safetensors format]
// A file is an 8-byte little-endian unsigned header length N, then N bytes of JSON, then the
// tensors' bytes. The JSON is an object: each tensor's name maps to
// {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} (offsets into the bytes after
// the header, end exclusive, little-endian, C order); the optional key "__metadata__" maps to an
// object of string values. The format allows the header to end in spaces: the writer pads it
// so that the data starts at a multiple of 8 bytes. The tensors' bytes cover the data section
// exactly, without gaps or overlaps (the reader checks, as the format's reference reader does).
// Dtypes: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL.
// Thread model: plain values and pure functions; the file functions touch only their path.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ddp::safetensors {

struct Tensor {
  std::string name;
  std::string dtype = "F32";   // one of the format's dtype names
  std::vector<int64_t> shape;  // [] for a scalar (one element)
  std::string bytes;           // little-endian, C order, numel x dtype size

  int64_t numel() const;
  // The values of an F32 tensor (InvalidArgument naming the tensor for another dtype).
  Result<std::vector<float>> floats() const;
};

struct File {
  std::vector<Tensor> tensors;                 // in data order
  std::map<std::string, std::string> metadata;  // "__metadata__"
  // The tensor named `name`, or nullptr.
  const Tensor* find(const std::string& name) const;
};

// Bytes per element of a dtype name; 0 for a name the format does not have.
int64_t dtypeBytes(const std::string& dtype);
// An F32 tensor from host floats.
Tensor floatTensor(std::string name, std::vector<int64_t> shape, const float* values);

// The file's bytes. InvalidArgument naming the tensor: an unknown dtype, a negative dimension,
// bytes that disagree with the shape, a duplicate or empty name, the name "__metadata__".
Result<std::string> encode(const File& file);
// Parses a whole file; `what` (the path) names it in every error, with the tensor at fault.
Result<File> decode(std::string_view bytes, const std::string& what);

// encode() written atomically (a temporary file renamed over `path`).
Status writeFile(const std::string& path, const File& file);
// The file's tensors without their bytes (only the header is read) and its metadata, with every
// check of decode(); what the controller checks at submission. NotFound when it cannot be opened.
Result<File> readHeader(const std::string& path);
// decode() of the file at `path`; NotFound when it is absent.
Result<File> readFile(const std::string& path);

}  // namespace ddp::safetensors
