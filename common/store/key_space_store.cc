#include "common/store/key_space_store.h"

#include <condition_variable>
#include <mutex>

namespace ddp::comm {

namespace {

// The outcome of one waiter, shared with its callback (which may run after the caller gave up).
struct WaitState {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;  // guarded by mu
  Status status;      // guarded by mu
};

// Blocks until the waiter for `keys` completes or `deadline` passes (then Timeout from the space).
Status waitFor(KeySpace& space, const std::vector<std::string>& keys, Deadline deadline) {
  auto state = std::make_shared<WaitState>();
  const KeySpace::WaitId id = space.waitAsync(keys, deadline, [state](const Status& st) {
    {
      std::lock_guard<std::mutex> lock(state->mu);
      state->done = true;
      state->status = st;
    }
    state->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(state->mu);
  if (!state->cv.wait_until(lock, deadline.at(), [&] { return state->done; })) {
    lock.unlock();
    if (space.expireWait(id)) {  // fails it with Timeout naming the missing keys
      lock.lock();
    } else {
      lock.lock();
      state->cv.wait(lock, [&] { return state->done; });  // it completed meanwhile: take that
    }
  }
  return state->status;
}

}  // namespace

Status KeySpaceStore::set(const std::string& key, const std::string& value) { return space_->set(key, value); }

Result<std::string> KeySpaceStore::get(const std::string& key, Deadline deadline) {
  while (true) {
    if (auto v = space_->get(key)) return std::move(*v);
    Status st = waitFor(*space_, {key}, deadline);
    if (st.code() == StatusCode::kTimeout) {
      return timeoutError("store get: key '" + key + "' not set before the deadline");
    }
    if (!st.isOk()) return st;
    // Set, but possibly deleted again before we read it: look again (until the deadline).
    if (auto v = space_->get(key)) return std::move(*v);
    if (deadline.expired()) return timeoutError("store get: key '" + key + "' not set before the deadline");
  }
}

Result<int64_t> KeySpaceStore::add(const std::string& key, int64_t delta) { return space_->add(key, delta); }

Result<std::string> KeySpaceStore::compareSet(const std::string& key, const std::string& expected,
                                              const std::string& desired) {
  return space_->compareSet(key, expected, desired);
}

Result<bool> KeySpaceStore::check(const std::vector<std::string>& keys) { return space_->check(keys); }

Result<bool> KeySpaceStore::deleteKey(const std::string& key) { return space_->deleteKey(key); }

Status KeySpaceStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  return waitFor(*space_, keys, deadline);
}

}  // namespace ddp::comm
