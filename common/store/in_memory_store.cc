#include "common/store/in_memory_store.h"

#include <charconv>

namespace ddp::comm {

bool parseStoreInt(const std::string& v, int64_t* out) {
  if (v.empty()) return false;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc() && p == v.data() + v.size();
}

Status InMemoryStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    data_[key] = value;
  }
  cv_.notify_all();
  return Status::ok();
}

Result<std::string> InMemoryStore::get(const std::string& key, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline.at(), [&] { return data_.count(key) > 0; })) {
    return timeoutError("store get: key '" + key + "' not set before the deadline");
  }
  return data_[key];
}

Result<int64_t> InMemoryStore::add(const std::string& key, int64_t delta) {
  int64_t value = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = data_.find(key);
    if (it != data_.end() && !parseStoreInt(it->second, &value)) {
      return invalidArgument("store add: key '" + key + "' holds a non-integer value");
    }
    int64_t sum = 0;
    if (__builtin_add_overflow(value, delta, &sum)) {
      return invalidArgument("store add: key '" + key + "': add of " + std::to_string(delta) + " to " +
                             std::to_string(value) + " overflows int64");
    }
    value = sum;
    data_[key] = std::to_string(value);
  }
  cv_.notify_all();
  return value;
}

Result<std::string> InMemoryStore::compareSet(const std::string& key, const std::string& expected,
                                              const std::string& desired) {
  std::string result;
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = data_.find(key);
    if (it == data_.end()) {
      if (expected.empty()) {
        data_[key] = desired;
        result = desired;
        changed = true;
      } else {
        result = expected;  // c10d returns `expected` when the key is absent
      }
    } else if (it->second == expected) {
      it->second = desired;
      result = desired;
      changed = true;
    } else {
      result = it->second;
    }
  }
  if (changed) cv_.notify_all();
  return result;
}

Result<bool> InMemoryStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& k : keys) {
    if (!data_.count(k)) return false;
  }
  return true;
}

Result<bool> InMemoryStore::deleteKey(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return data_.erase(key) > 0;
}

Status InMemoryStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  auto allPresent = [&] {
    for (const auto& k : keys) {
      if (!data_.count(k)) return false;
    }
    return true;
  };
  if (!cv_.wait_until(lock, deadline.at(), allPresent)) {
    std::string missing;
    for (const auto& k : keys) {
      if (!data_.count(k)) missing += (missing.empty() ? "" : ", ") + k;
    }
    return timeoutError("store wait: keys not set before the deadline: " + missing);
  }
  return Status::ok();
}

size_t InMemoryStore::numKeys() const {
  std::lock_guard<std::mutex> lock(mu_);
  return data_.size();
}

}  // namespace ddp::comm
