#pragma once
// PrefixStore: namespaces every key of an underlying Store, e.g. "fmnist/gen3/" + key, so each
// job and each rendezvous generation has its own key space (Note [Store prefix per generation]
// in gloo_store_adapter.h explains why keys must never be reused across generations).
// Prefix stores nest: PrefixStore("nccl/", PrefixStore("job/gen3/", base)).
// Error messages from the underlying store name the full (prefixed) key.
// Thread model: as thread-safe as the underlying Store; holds only the prefix.

#include <memory>
#include <string>

#include "common/store/store.h"

namespace ddp::comm {

class PrefixStore final : public Store {
 public:
  // Does not own `base`, which must outlive this store.
  PrefixStore(std::string prefix, Store& base);
  // Shares ownership of `base`.
  PrefixStore(std::string prefix, std::shared_ptr<Store> base);

  // "job/gen<generation>/": the per-job, per-generation namespace of the rendezvous.
  static std::string jobGenerationPrefix(const std::string& job, int64_t generation);

  const std::string& prefix() const { return prefix_; }
  std::string fullKey(const std::string& key) const { return prefix_ + key; }

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

 private:
  std::vector<std::string> fullKeys(const std::vector<std::string>& keys) const;

  const std::string prefix_;
  std::shared_ptr<Store> owned_;
  Store& base_;
};

}  // namespace ddp::comm
