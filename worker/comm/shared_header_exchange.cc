#include "worker/comm/shared_header_exchange.h"

#include <cstring>
#include <exception>
#include <vector>

namespace ddp::comm {

static_assert(sizeof(OpHeader) == kSharedWordsPerRank * sizeof(uint64_t), "a header fills a rank's words");

void SharedHeaderExchange::post(const OpHeader& mine, std::string what, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  posted_[mine.collSeq] = Item{mine, std::move(what), timeout};
}

void SharedHeaderExchange::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  posted_.clear();
}

Status SharedHeaderExchange::await(uint64_t collSeq, Deadline deadline, const std::function<bool()>& abandon) {
  Item item;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return abortedError("header exchange stopped");
    auto it = posted_.find(collSeq);
    if (it == posted_.end())
      return internalError("header of collective #" + std::to_string(collSeq) + " was never posted");
    item = std::move(it->second);
    posted_.erase(it);
  }
  if (size_ == 1) return Status::ok();
  std::vector<uint64_t> words(kSharedWordsPerRank * static_cast<size_t>(size_), 0);
  std::memcpy(&words[kSharedWordsPerRank * static_cast<size_t>(rank_)], &item.header, sizeof(OpHeader));
  const Deadline own = Deadline::after(item.timeout);
  try {
    words_->allgather(words, own.remaining() < deadline.remaining() ? own : deadline, abandon);
  } catch (const std::exception& e) {
    if (abandon && abandon()) return abortedError(item.what + ": header exchange abandoned");
    return unavailable(item.what + ": header exchange over shared memory failed: " + e.what());
  }
  std::vector<OpHeader> all(static_cast<size_t>(size_));
  std::memcpy(all.data(), words.data(), sizeof(OpHeader) * all.size());
  return compareHeaders(all, rank_, item.what);
}

}  // namespace ddp::comm
