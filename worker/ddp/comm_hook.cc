#include "worker/ddp/comm_hook.h"

#include <cstring>

namespace ddp {

Status GradBucket::setBuffer(comm::BufferView values) {
  if (values.count != buffer_.count || values.dtype != buffer_.dtype) {
    return invalidArgument("GradBucket " + std::to_string(index_) + " setBuffer: got " +
                           std::to_string(values.count) + " x " + dtypeName(values.dtype) + ", bucket holds " +
                           std::to_string(buffer_.count) + " x " + dtypeName(buffer_.dtype));
  }
  if (!buffer_.device.isCpu() || !values.device.isCpu()) {
    return unimplemented("GradBucket::setBuffer on a CUDA bucket: use the kernels' copy");
  }
  if (values.data != buffer_.data) std::memmove(buffer_.data, values.data, values.bytes());
  return Status::ok();
}

}  // namespace ddp
