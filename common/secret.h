#pragma once
// Secrets: random tokens and their comparison. Used for the controller's API token, job worker
// tokens and job uids.
// Thread model: pure functions (randomHex reads /dev/urandom).

#include <cstddef>
#include <string>

#include "common/status.h"

namespace ddp {

// `bytes` random bytes from /dev/urandom as lowercase hex (2 * bytes characters).
Result<std::string> randomHex(size_t bytes);

// Constant-time comparison of a presented secret with the expected one (time depends only on
// the expected length). An empty expected secret matches nothing.
bool secretEquals(const std::string& expected, const std::string& presented);

}  // namespace ddp
