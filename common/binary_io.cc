#include "common/binary_io.h"

#include <zlib.h>

namespace ddp {

uint32_t crc32(const void* data, size_t n, uint32_t seed) {
  uLong crc = seed;
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {
    const uInt chunk = n > (1u << 30) ? (1u << 30) : static_cast<uInt>(n);
    crc = ::crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

std::string writeFramed(uint32_t magic, uint32_t version, std::string_view payload) {
  BinaryWriter w;
  w.put<uint32_t>(magic);
  w.put<uint32_t>(version);
  w.put<uint64_t>(payload.size());
  w.put<uint32_t>(crc32(payload.data(), payload.size()));
  w.putBytes(payload.data(), payload.size());
  return w.take();
}

Result<std::string> readFramed(std::string_view frame, uint32_t magic, uint32_t maxVersion,
                               uint32_t* version, const std::string& what) {
  BinaryReader r(frame, what);
  uint32_t gotMagic = 0, gotVersion = 0, crc = 0;
  uint64_t len = 0;
  DDP_RETURN_IF_ERROR(r.get(&gotMagic));
  if (gotMagic != magic) return dataLoss(what + ": bad magic (not this kind of file)");
  DDP_RETURN_IF_ERROR(r.get(&gotVersion));
  if (gotVersion == 0 || gotVersion > maxVersion) {
    return dataLoss(what + ": unsupported format version " + std::to_string(gotVersion) +
                    " (this build reads up to " + std::to_string(maxVersion) + ")");
  }
  DDP_RETURN_IF_ERROR(r.get(&len));
  DDP_RETURN_IF_ERROR(r.get(&crc));
  if (len != r.remaining()) {
    return dataLoss(what + ": payload length " + std::to_string(len) + " but " +
                    std::to_string(r.remaining()) + " bytes present (truncated or padded)");
  }
  std::string payload(frame.substr(frame.size() - len));
  if (crc32(payload.data(), payload.size()) != crc) return dataLoss(what + ": checksum mismatch");
  if (version) *version = gotVersion;
  return payload;
}

}  // namespace ddp
