#pragma once
// IDX files (the MNIST format: MNIST, KMNIST, EMNIST, Fashion-MNIST), gzip-compressed or plain:
// finding a split's images and labels in a directory, and their headers, checked without
// reading the data (Note [IDX directories]).
//
// Note [IDX directories]
// An IDX file is a big-endian header -- two zero bytes, a type code (0x08: unsigned bytes, the
// only one these datasets use), the number of dimensions, one uint32 per dimension -- then the
// data. Images have three dimensions (count x rows x cols), labels one (count). A directory holds
// a split as the pair <prefix>train-images-idx3-ubyte and <prefix>train-labels-idx1-ubyte (the
// evaluation split: t10k- or test- instead of train-), each optionally ending in .gz, as the
// MNIST family ships them (EMNIST's prefix "emnist-balanced-" included). A directory with two
// candidates for one file is refused, naming both. A plain file's size must be exactly what its
// header says; a gzip file's trailer (its uncompressed size modulo 2^32) must agree too, so a
// truncated download is found before training.
// Thread model: free functions.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::datafiles {

enum class IdxSplit : uint8_t { kTrain, kEval };

struct IdxHeader {
  std::vector<int64_t> dims;
  int64_t headerBytes = 0;
  bool gzip = false;
};

struct IdxPair {
  std::string images;
  std::string labels;
};

// The split's two files in `dir`. NotFound naming the directory and the names looked for;
// InvalidArgument when two files match one name.
Result<IdxPair> findIdxPair(const std::string& dir, IdxSplit split);
// The header of `path` (gzip or plain), its type code checked (0x08) and its dimension count
// (`dims`), and its size against the header. Errors name the file.
Result<IdxHeader> readIdxHeader(const std::string& path, int dims);
// findIdxPair, both headers, and that images and labels count the same samples; the images'
// sample shape {1, rows, cols} and count come back.
struct IdxShape {
  IdxPair files;
  int64_t samples = 0;
  std::vector<int64_t> sampleShape;
};
Result<IdxShape> inspectIdxSplit(const std::string& dir, IdxSplit split);

}  // namespace ddp::datafiles
