#pragma once
// SharedHeaderExchange: op headers (Note [Op header]) compared through the futex page of ranks on
// one host (Note [Shared-memory phases]), by the executor itself.
//
// Note [Shared header exchange]
// Over Gloo each header costs a lane thread's wake-up, a TCP message each way and Gloo's I/O loop
// on both sides (Note [Header lane]); with two workers on two cores that was about 4 % of a CNN
// step's CPU per worker. When the ranks share a futex page, the executor writes its 32-byte
// header into the page and waits for every rank's (one SharedWords allgather) right before the
// op: no thread, no socket. The lane's head start is not needed: when the peers are already
// there the exchange returns without sleeping, and when they are not the op would wait for them
// anyway. post() only records the header. The executor runs collectives in collective order on
// every rank, so headers and the same-host allreduce's own exchanges interleave in the same order
// on every rank.
// Thread model: post() from the backend under its lock; await() from the executor.

#include <map>
#include <memory>
#include <mutex>

#include "worker/comm/header_exchange.h"
#include "worker/comm/shared_words.h"

namespace ddp::comm {

class SharedHeaderExchange final : public HeaderExchange {
 public:
  SharedHeaderExchange(std::shared_ptr<SharedWords> words, int rank, int size)
      : words_(std::move(words)), rank_(rank), size_(size) {}

  void post(const OpHeader& mine, std::string what, std::chrono::milliseconds timeout) override;
  Status await(uint64_t collSeq, Deadline deadline, const std::function<bool()>& abandon) override;
  void stop() override;

 private:
  const std::shared_ptr<SharedWords> words_;
  const int rank_;
  const int size_;
  std::mutex mu_;
  std::map<uint64_t, Item> posted_;  // guarded by mu_
  bool stopped_ = false;             // guarded by mu_
};

}  // namespace ddp::comm
