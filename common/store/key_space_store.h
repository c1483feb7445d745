#pragma once
// KeySpaceStore: the comm::Store interface over a KeySpace, for code in the serving process
// (HttpStoreServer::store(), the controller) that wants blocking get/wait with a deadline.
// A blocking call registers a KeySpace waiter and waits on its own condition variable until the
// deadline, so it needs no timer; it cancels its waiter on the way out.
// Thread model: thread-safe (the KeySpace is); blocking calls block only their caller.

#include <memory>

#include "common/store/key_space.h"
#include "common/store/store.h"

namespace ddp::comm {

class KeySpaceStore final : public Store {
 public:
  explicit KeySpaceStore(std::shared_ptr<KeySpace> space) : space_(std::move(space)) {}

  Status set(const std::string& key, const std::string& value) override;
  using Store::get;
  using Store::wait;
  Result<std::string> get(const std::string& key, Deadline deadline) override;
  Result<int64_t> add(const std::string& key, int64_t delta) override;
  Result<std::string> compareSet(const std::string& key, const std::string& expected,
                                 const std::string& desired) override;
  Result<bool> check(const std::vector<std::string>& keys) override;
  Result<bool> deleteKey(const std::string& key) override;
  Status wait(const std::vector<std::string>& keys, Deadline deadline) override;

  KeySpace& space() { return *space_; }

 private:
  const std::shared_ptr<KeySpace> space_;
};

}  // namespace ddp::comm
