#pragma once
// Standard base64 (with padding), as Secret `data` carries values: the launcher writes the
// worker token Secret with it, the Kubernetes front end reads and writes the API token Secret.
// Thread model: pure functions.

#include <string>

#include "common/status.h"

namespace ddp::controller::kube {

std::string base64Encode(const std::string& bytes);
// InvalidArgument for text that is not base64.
Result<std::string> base64Decode(const std::string& text);

}  // namespace ddp::controller::kube
