#include "common/store/key_space.h"

#include <algorithm>
#include <set>

#include "common/store/in_memory_store.h"

namespace ddp::comm {

namespace {

std::string join(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

KeySpace::KeySpace(size_t quotaBytes) : quota_(quotaBytes) {}

KeySpace::~KeySpace() { clear("key space destroyed"); }

void KeySpace::run(std::vector<Ready>& ready) {
  for (auto& r : ready) r.callback(r.status);
  ready.clear();
}

Status KeySpace::checkQuota(const std::string& key, size_t oldBytes, size_t newBytes) const {
  if (newBytes <= oldBytes || quota_ == kNoQuota) return Status::ok();
  const size_t after = bytes_ - oldBytes + newBytes;
  if (after <= quota_) return Status::ok();
  return outOfRange("key space quota of " + std::to_string(quota_) + " bytes exceeded: writing '" + key + "' (" +
                    std::to_string(newBytes) + " bytes with its key) would bring it to " + std::to_string(after) +
                    " bytes");
}

void KeySpace::storeLocked(const std::string& key, std::string value, std::vector<Ready>* ready) {
  auto it = data_.find(key);
  if (it != data_.end()) {
    bytes_ = bytes_ - it->second.size() + value.size();
    it->second = std::move(value);
    return;
  }
  bytes_ += key.size() + value.size();
  data_.emplace(key, std::move(value));
  keyAppeared(key, ready);
}

void KeySpace::keyAppeared(const std::string& key, std::vector<Ready>* ready) {
  auto idx = waitingOn_.find(key);
  if (idx == waitingOn_.end()) return;
  std::unordered_set<WaitId> ids = std::move(idx->second);
  waitingOn_.erase(idx);
  // Registration order: ids grow with time.
  std::vector<WaitId> ordered(ids.begin(), ids.end());
  std::sort(ordered.begin(), ordered.end());
  for (WaitId id : ordered) {
    auto w = waiters_.find(id);
    if (w == waiters_.end() || --w->second.missing > 0) continue;
    // Every key it was indexed under appeared; one that was present at registration may have
    // been deleted since, so look again.
    std::set<std::string> absent;
    for (const auto& k : w->second.keys) {
      if (!data_.count(k)) absent.insert(k);
    }
    if (!absent.empty()) {
      w->second.missing = absent.size();
      for (const auto& k : absent) waitingOn_[k].insert(id);
      continue;
    }
    ready->push_back({removeWaiter(w), Status::ok()});
  }
}

KeySpace::WaitCallback KeySpace::removeWaiter(std::unordered_map<WaitId, Waiter>::iterator it) {
  for (const auto& k : it->second.keys) {
    auto idx = waitingOn_.find(k);
    if (idx == waitingOn_.end()) continue;
    idx->second.erase(it->first);
    if (idx->second.empty()) waitingOn_.erase(idx);
  }
  deadlines_.erase(it->second.byDeadline);
  WaitCallback cb = std::move(it->second.callback);
  waiters_.erase(it);
  return cb;
}

Status KeySpace::timeoutStatus(const Waiter& w) const {
  std::vector<std::string> absent;
  for (const auto& k : w.keys) {
    if (!data_.count(k) && std::find(absent.begin(), absent.end(), k) == absent.end()) absent.push_back(k);
  }
  return timeoutError("store wait: keys not set before the deadline: " + join(absent));
}

Status KeySpace::set(const std::string& key, std::string value) {
  std::vector<Ready> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = data_.find(key);
    const size_t oldBytes = it == data_.end() ? 0 : key.size() + it->second.size();
    DDP_RETURN_IF_ERROR(checkQuota(key, oldBytes, key.size() + value.size()));
    storeLocked(key, std::move(value), &ready);
  }
  run(ready);
  return Status::ok();
}

std::optional<std::string> KeySpace::get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = data_.find(key);
  if (it == data_.end()) return std::nullopt;
  return it->second;
}

Result<int64_t> KeySpace::add(const std::string& key, int64_t delta) {
  std::vector<Ready> ready;
  int64_t sum = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = data_.find(key);
    int64_t value = 0;
    if (it != data_.end() && !parseStoreInt(it->second, &value)) {
      return invalidArgument("store add: key '" + key + "' holds a non-integer value");
    }
    if (__builtin_add_overflow(value, delta, &sum)) {
      return invalidArgument("store add: key '" + key + "': add of " + std::to_string(delta) + " to " +
                             std::to_string(value) + " overflows int64");
    }
    std::string text = std::to_string(sum);
    const size_t oldBytes = it == data_.end() ? 0 : key.size() + it->second.size();
    DDP_RETURN_IF_ERROR(checkQuota(key, oldBytes, key.size() + text.size()));
    storeLocked(key, std::move(text), &ready);
  }
  run(ready);
  return sum;
}

Result<std::string> KeySpace::compareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired) {
  std::vector<Ready> ready;
  std::string result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = data_.find(key);
    const bool absent = it == data_.end();
    if (absent ? !expected.empty() : it->second != expected) {
      return absent ? expected : it->second;  // c10d returns `expected` when the key is absent
    }
    const size_t oldBytes = absent ? 0 : key.size() + it->second.size();
    DDP_RETURN_IF_ERROR(checkQuota(key, oldBytes, key.size() + desired.size()));
    storeLocked(key, desired, &ready);
    result = desired;
  }
  run(ready);
  return result;
}

bool KeySpace::check(const std::vector<std::string>& keys) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& k : keys) {
    if (!data_.count(k)) return false;
  }
  return true;
}

std::vector<std::string> KeySpace::missing(const std::vector<std::string>& keys) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& k : keys) {
    if (!data_.count(k)) out.push_back(k);
  }
  return out;
}

bool KeySpace::deleteKey(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = data_.find(key);
  if (it == data_.end()) return false;
  bytes_ -= key.size() + it->second.size();
  data_.erase(it);
  return true;
}

KeySpace::WaitId KeySpace::waitAsync(std::vector<std::string> keys, Deadline deadline, WaitCallback callback) {
  Status now;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::string> absent;
    for (const auto& k : keys) {
      if (!data_.count(k)) absent.insert(k);
    }
    if (!absent.empty() && !deadline.expired()) {
      const WaitId id = nextWaitId_++;
      Waiter w;
      w.keys = std::move(keys);
      w.missing = absent.size();
      w.callback = std::move(callback);
      w.byDeadline = deadlines_.emplace(deadline.at(), id);
      for (const auto& k : absent) waitingOn_[k].insert(id);
      waiters_.emplace(id, std::move(w));
      return id;
    }
    if (!absent.empty()) {
      Waiter probe;
      probe.keys = keys;
      now = timeoutStatus(probe);
    }
  }
  callback(now);
  return 0;
}

bool KeySpace::cancelWait(WaitId id) {
  WaitCallback dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return false;
  dropped = removeWaiter(it);
  return true;
}

bool KeySpace::expireWait(WaitId id) {
  std::vector<Ready> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = waiters_.find(id);
    if (it == waiters_.end()) return false;
    Status st = timeoutStatus(it->second);
    ready.push_back({removeWaiter(it), std::move(st)});
  }
  run(ready);
  return true;
}

size_t KeySpace::expire(TimePoint now) {
  std::vector<Ready> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      auto it = waiters_.find(deadlines_.begin()->second);
      Status st = timeoutStatus(it->second);
      ready.push_back({removeWaiter(it), std::move(st)});
    }
  }
  const size_t n = ready.size();
  run(ready);
  return n;
}

size_t KeySpace::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t KeySpace::numKeys() const {
  std::lock_guard<std::mutex> lock(mu_);
  return data_.size();
}

size_t KeySpace::numWaiters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_.size();
}

void KeySpace::clear(const std::string& reason) {
  std::vector<Ready> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    data_.clear();
    bytes_ = 0;
    std::vector<WaitId> ids;
    for (const auto& [id, w] : waiters_) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    for (WaitId id : ids) ready.push_back({std::move(waiters_[id].callback), abortedError(reason)});
    waiters_.clear();
    waitingOn_.clear();
    deadlines_.clear();
  }
  run(ready);
}

}  // namespace ddp::comm
