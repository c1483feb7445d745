#include "common/store/prefix_store.h"

#include "common/status.h"

namespace ddp::comm {

PrefixStore::PrefixStore(std::string prefix, Store& base) : prefix_(std::move(prefix)), base_(base) {
  setTimeout(base.timeout());
}

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> base)
    : prefix_(std::move(prefix)), owned_(std::move(base)), base_(*owned_) {
  DDP_CHECK(owned_ != nullptr);
  setTimeout(base_.timeout());
}

std::string PrefixStore::jobGenerationPrefix(const std::string& job, int64_t generation) {
  return job + "/gen" + std::to_string(generation) + "/";
}

std::vector<std::string> PrefixStore::fullKeys(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(prefix_ + k);
  return out;
}

Status PrefixStore::set(const std::string& key, const std::string& value) {
  return base_.set(prefix_ + key, value);
}

Result<std::string> PrefixStore::get(const std::string& key, Deadline deadline) {
  return base_.get(prefix_ + key, deadline);
}

Result<int64_t> PrefixStore::add(const std::string& key, int64_t delta) {
  return base_.add(prefix_ + key, delta);
}

Result<std::string> PrefixStore::compareSet(const std::string& key, const std::string& expected,
                                            const std::string& desired) {
  return base_.compareSet(prefix_ + key, expected, desired);
}

Result<bool> PrefixStore::check(const std::vector<std::string>& keys) {
  return base_.check(fullKeys(keys));
}

Result<bool> PrefixStore::deleteKey(const std::string& key) { return base_.deleteKey(prefix_ + key); }

Status PrefixStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  return base_.wait(fullKeys(keys), deadline);
}

}  // namespace ddp::comm
