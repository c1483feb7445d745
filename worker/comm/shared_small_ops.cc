#include "worker/comm/shared_small_ops.h"

#include <cstring>
#include <utility>

#include "worker/comm/reduce_kernels.h"

namespace ddp::comm {

SharedSmallOps::SharedSmallOps(std::shared_ptr<SharedWords> words, int rank, int size, std::function<bool()> abandon)
    : page_(std::move(words)), rank_(rank), size_(size), abandon_(std::move(abandon)) {}

void SharedSmallOps::exchange(const void* mine, size_t bytes, Deadline deadline) {
  per_ = (bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t);
  words_.assign(static_cast<size_t>(size_) * per_, 0);
  std::memcpy(&words_[static_cast<size_t>(rank_) * per_], mine, bytes);
  page_->allgather(words_, deadline, abandon_);
}

void SharedSmallOps::allreduce(BufferView buf, ReduceOp op, Deadline deadline) {
  exchange(buf.data, buf.bytes(), deadline);
  foldInRankOrder(from(0), per_ * sizeof(uint64_t), size_, buf, op);
}

void SharedSmallOps::broadcast(BufferView buf, int root, Deadline deadline) {
  exchange(buf.data, buf.bytes(), deadline);
  if (rank_ != root) std::memcpy(buf.data, from(root), buf.bytes());
}

void SharedSmallOps::allgather(char* out, size_t block, Deadline deadline) {
  exchange(out + static_cast<size_t>(rank_) * block, block, deadline);
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) std::memcpy(out + static_cast<size_t>(r) * block, from(r), block);
  }
}

}  // namespace ddp::comm
