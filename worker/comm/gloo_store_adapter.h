#pragma once
// GlooStoreAdapter: Gloo's rendezvous Store interface over our comm::Store, with every key
// namespaced as "gloo/<prefix>/<key>".
//
// Note [Store prefix per generation]
// Gloo's FileStore aborts ("File already exists") when a prefix is reused, and any store hands
// a late joiner the addresses of a previous communicator if keys are reused. Each backend
// generation therefore gets its own prefix (GlooOptions::prefix), e.g. "job/gen3"; an aborted
// communicator's keys are never read again.
//
// Gloo's rendezvous code expects exceptions: this adapter throws gloo::IoException on store
// errors or when `deadline` passes (get() and wait() never block past it). GlooBackend::create
// catches them at its boundary.
// Thread model: as thread-safe as the underlying Store; holds no state besides the prefix.

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "common/clock.h"
#include "common/store/store.h"

namespace ddp::comm {

class GlooStoreAdapter final : public ::gloo::rendezvous::Store {
 public:
  // `store` must outlive the adapter.
  GlooStoreAdapter(comm::Store& store, std::string prefix, Deadline deadline);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  // The full key stored in the underlying store.
  std::string fullKey(const std::string& key) const;

 private:
  comm::Store& store_;
  const std::string prefix_;
  const Deadline deadline_;
};

}  // namespace ddp::comm
