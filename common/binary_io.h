#pragma once
// Little-endian binary serialization with bounds-checked reads, and CRC32 checksums.
// Used by comm-hook state, optimizer/ZeRO state and checkpoint files.
// Framed format (writeFramed/readFramed): magic(u32) version(u32) payload_len(u64) crc32(u32)
// payload. A truncated, oversized or corrupted frame is reported as DataLoss naming what failed.
// Thread model: plain values.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/status.h"

namespace ddp {

uint32_t crc32(const void* data, size_t n, uint32_t seed = 0);

class BinaryWriter {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const char* p = reinterpret_cast<const char*>(&v);
    buf_.append(p, sizeof(T));
  }
  void putBytes(const void* data, size_t n) { buf_.append(static_cast<const char*>(data), n); }
  void putString(std::string_view s) {
    put<uint64_t>(s.size());
    buf_.append(s.data(), s.size());
  }
  template <typename T>
  void putVector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint64_t>(v.size());
    putBytes(v.data(), v.size() * sizeof(T));
  }
  const std::string& data() const { return buf_; }
  std::string take() { return std::move(buf_); }

 private:
  std::string buf_;
};

class BinaryReader {
 public:
  explicit BinaryReader(std::string_view data, std::string what = "buffer")
      : data_(data), what_(std::move(what)) {}

  template <typename T>
  Status get(T* out) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (data_.size() - pos_ < sizeof(T)) return truncated(sizeof(T));
    std::memcpy(out, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::ok();
  }
  Status getBytes(void* out, size_t n) {
    if (data_.size() - pos_ < n) return truncated(n);
    if (n > 0) std::memcpy(out, data_.data() + pos_, n);  // `out` may be null when n is 0 (an empty vector)
    pos_ += n;
    return Status::ok();
  }
  Status getString(std::string* out) {
    uint64_t n = 0;
    DDP_RETURN_IF_ERROR(get(&n));
    if (data_.size() - pos_ < n) return truncated(n);
    out->assign(data_.data() + pos_, n);
    pos_ += n;
    return Status::ok();
  }
  template <typename T>
  Status getVector(std::vector<T>* out) {
    uint64_t n = 0;
    DDP_RETURN_IF_ERROR(get(&n));
    if (n > (data_.size() - pos_) / sizeof(T)) return truncated(n * sizeof(T));
    out->resize(n);
    return getBytes(out->data(), n * sizeof(T));
  }
  size_t remaining() const { return data_.size() - pos_; }
  bool atEnd() const { return pos_ == data_.size(); }

 private:
  Status truncated(size_t want) const {
    return dataLoss(what_ + ": truncated at byte " + std::to_string(pos_) + " (wanted " +
                    std::to_string(want) + " more, " + std::to_string(data_.size() - pos_) + " left)");
  }
  std::string_view data_;
  size_t pos_ = 0;
  std::string what_;
};

// Wraps `payload` in a frame with magic, version, length and CRC32.
std::string writeFramed(uint32_t magic, uint32_t version, std::string_view payload);
// Checks magic, version (must be <= maxVersion), length and CRC; returns the payload and sets
// *version. `what` names the thing in error messages ("PowerSGD state", "checkpoint rank 1").
Result<std::string> readFramed(std::string_view frame, uint32_t magic, uint32_t maxVersion,
                               uint32_t* version, const std::string& what);

}  // namespace ddp
