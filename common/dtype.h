#pragma once
// Element types and devices shared by kernels, collectives and models (no CUDA needed).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace ddp {

enum class DType : uint8_t { kF32 = 0, kF64, kF16, kBF16, kI32, kI64 };

size_t dtypeSize(DType d);
const char* dtypeName(DType d);  // "f32", "f64", "f16", "bf16", "i32", "i64"
bool parseDType(const std::string& name, DType* out);

enum class DeviceType : uint8_t { kCpu = 0, kCuda };

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;  // CUDA ordinal; 0 for CPU
  static Device cpu() { return {}; }
  static Device cuda(int i = 0) { return {DeviceType::kCuda, i}; }
  bool isCpu() const { return type == DeviceType::kCpu; }
  bool isCuda() const { return type == DeviceType::kCuda; }
  bool operator==(const Device&) const = default;
  std::string toString() const;  // "cpu", "cuda:0"
};

// IEEE half and bfloat16 conversions on the CPU (round to nearest even).
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
inline uint16_t floatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16ToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace ddp
