#pragma once
// The HTTP store's wire vocabulary, shared by HttpStoreServer and HttpStoreClient (see
// docs/STORE.md): endpoint paths, parameter and header names, and the percent-encoding of keys.
// Thread model: constants and pure functions.

#include <string>

namespace ddp::comm::store_wire {

// The store's operations live at <base>/<op>; HttpStoreServer's base is kDefaultBasePath, the
// controller's /v1/jobs/<job>/generations/<g>/store.
inline constexpr const char* kDefaultBasePath = "/v1/store";
inline constexpr const char* kValueOp = "value";              // GET, PUT, DELETE
inline constexpr const char* kAddOp = "add";                  // POST
inline constexpr const char* kCompareSetOp = "compare_set";   // POST
inline constexpr const char* kCheckOp = "check";              // GET
inline constexpr const char* kWaitOp = "wait";                // GET

inline constexpr const char* kValuePath = "/v1/store/value";            // GET, PUT, DELETE
inline constexpr const char* kAddPath = "/v1/store/add";                // POST
inline constexpr const char* kCompareSetPath = "/v1/store/compare_set"; // POST
inline constexpr const char* kCheckPath = "/v1/store/check";            // GET
inline constexpr const char* kWaitPath = "/v1/store/wait";              // GET

inline constexpr const char* kKeyParam = "key";
inline constexpr const char* kWaitParam = "wait_ms";
inline constexpr const char* kDeltaParam = "delta";
inline constexpr const char* kExpectedLenParam = "expected_len";

// Set on a 404 that means "not there (yet)", as opposed to an unknown endpoint.
inline constexpr const char* kMissingHeader = "X-Ddp-Store";

// Percent-encodes every byte outside [A-Za-z0-9-._~].
inline std::string encode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3);
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// Inverse of encode(); malformed escapes are kept literally.
inline std::string decode(const std::string& s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace ddp::comm::store_wire
