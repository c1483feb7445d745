#pragma once
// Store: the rendezvous key-value store (c10d Store semantics). Values are binary-safe.
// Implementations: InMemoryStore (ranks as threads), HttpStoreClient (against HttpStoreServer),
// PrefixStore (namespaces keys by job and generation over any Store).
// Thread model: every implementation is thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::comm {

inline constexpr Duration kDefaultStoreTimeout = std::chrono::seconds(300);

class Store {
 public:
  virtual ~Store() = default;

  virtual Status set(const std::string& key, const std::string& value) = 0;
  // Blocks until `key` exists or the deadline passes (Timeout naming the key).
  virtual Result<std::string> get(const std::string& key, Deadline deadline) = 0;
  // Atomically adds `delta` to the integer stored at key (created as 0); returns the new value.
  // A key holding a non-integer value gives InvalidArgument.
  virtual Result<int64_t> add(const std::string& key, int64_t delta) = 0;
  // If the key's value equals `expected` (or the key is absent and `expected` is empty), sets it
  // to `desired`. Returns the value after the call.
  virtual Result<std::string> compareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired) = 0;
  // True iff every key exists now (does not wait).
  virtual Result<bool> check(const std::vector<std::string>& keys) = 0;
  // True if the key existed.
  virtual Result<bool> deleteKey(const std::string& key) = 0;
  // Blocks until every key exists or the deadline passes (Timeout naming the missing keys).
  virtual Status wait(const std::vector<std::string>& keys, Deadline deadline) = 0;

  // Convenience forms using the store's default timeout.
  Result<std::string> get(const std::string& key) { return get(key, Deadline::after(timeout())); }
  Status wait(const std::vector<std::string>& keys) { return wait(keys, Deadline::after(timeout())); }

  Duration timeout() const { return timeout_; }
  void setTimeout(Duration t) { timeout_ = t; }

 private:
  Duration timeout_ = kDefaultStoreTimeout;
};

}  // namespace ddp::comm
