#pragma once
// The agreement of GlooBackend::create() on the same-host paths (Note [Same-host agreement]).
//
// Note [Same-host agreement]
// Two store rounds under `prefix`/xmem/, each a barrier of every rank; the page rides on the
// probe's rounds rather than adding its own (every new generation of a job runs this):
//  1. Rank 0 creates the futex page (Note [Shared-memory phases]) and publishes its descriptor
//     ("words": "<fd>", or "none <why>") before its HostIdentity; every rank publishes its
//     HostIdentity (host/<rank>) and reads all of them. Unless sameHost() holds for all, every
//     rank decides on TCP only.
//  2. Every rank probes each peer's memory (Note [Same-host allreduce]) and, if that works, maps
//     rank 0's page (through /proc/<pid>/fd) and watches the peers' processes; it publishes its
//     verdict (probe/<rank>: "ok", "ok <why the page failed>", or why the probe failed) and
//     reads all of them. Every rank reads the same verdicts, so all decide alike: cross-memory
//     reads when every probe succeeded, and the page too when every rank mapped it.
// Thread model: a free function; the calling thread blocks on the store.

#include <memory>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "worker/comm/cross_memory.h"
#include "worker/comm/shared_words.h"

namespace ddp::comm {

class Store;

struct SameHostPaths {
  std::shared_ptr<const CrossMemory> memory;  // null: every allreduce over TCP
  std::shared_ptr<SharedWords> words;         // null: the phases over Gloo (the page failed)
  std::string summary;                         // what was agreed, and why not more
};

// Errors: the store's (a missing peer by `deadline`).
Result<SameHostPaths> agreeSameHost(Store& store, const std::string& prefix, int rank, int size, Deadline deadline);

}  // namespace ddp::comm
