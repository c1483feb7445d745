#pragma once
// InMemoryStore: a Store shared by ranks running as threads of one process.
// Thread model: thread-safe; waiters block on one condition variable (mu_).

#include <condition_variable>
#include <map>
#include <mutex>

#include "common/store/store.h"

namespace ddp::comm {

class InMemoryStore final : public Store {
 public:
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

  size_t numKeys() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> data_;  // guarded by mu_
};

// Parses a store value as a decimal int64 (used by add()); false if it is not one.
bool parseStoreInt(const std::string& value, int64_t* out);

}  // namespace ddp::comm
