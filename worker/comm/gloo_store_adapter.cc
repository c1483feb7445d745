#include "worker/comm/gloo_store_adapter.h"

#include <gloo/common/error.h>

namespace ddp::comm {

GlooStoreAdapter::GlooStoreAdapter(comm::Store& store, std::string prefix, Deadline deadline)
    : store_(store), prefix_(std::move(prefix)), deadline_(deadline) {}

std::string GlooStoreAdapter::fullKey(const std::string& key) const {
  return "gloo/" + prefix_ + "/" + key;
}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  Status st = store_.set(fullKey(key), std::string(data.begin(), data.end()));
  if (!st.isOk()) throw ::gloo::IoException("store set " + fullKey(key) + ": " + st.toString());
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  auto r = store_.get(fullKey(key), deadline_);
  if (!r.isOk()) throw ::gloo::IoException("store get " + fullKey(key) + ": " + r.status().toString());
  return std::vector<char>(r->begin(), r->end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const auto& k : keys) full.push_back(fullKey(k));
  Status st = store_.wait(full, deadline_);
  if (!st.isOk()) throw ::gloo::IoException("store wait: " + st.toString());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const auto& k : keys) full.push_back(fullKey(k));
  Status st = store_.wait(full, deadline_.min(Deadline::after(timeout)));
  if (!st.isOk()) throw ::gloo::IoException("store wait: " + st.toString());
}

}  // namespace ddp::comm
