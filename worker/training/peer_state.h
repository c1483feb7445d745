#pragma once
// PeerState: a rank's training state at its last completed step, kept in memory across
// generations of the worker process so that a new generation can start from a live peer
// instead of a checkpoint (Note [Healing from live peers]).
//
// Note [Healing from live peers]
// When a generation ends on a fault, each surviving worker keeps what it held at its last step
// boundary (Trainer::peerState: the trainer position, parameters, a replicated optimizer's
// state, the sampler position, the comm hook's state), if that state is complete on one rank:
// with ZeRO-1 or DistributedFusedAdam a part of the optimizer state, with PowerSGD's error
// feedback a per-rank residual lived on the lost rank, so those runs fall back to the last
// committed checkpoint (which reshards; Note [Checkpoints at any world size]). In the next
// generation every rank takes part in exchangePeerState() before any checkpoint is read: the
// ranks agree on the newest step any of them holds (allreduce MAX), the lowest rank holding it
// is the source (allreduce MIN), and it broadcasts its sections to every rank over the new
// communicator; every rank then loads them exactly as it loads a checkpoint (at any world size:
// Note [Elastic batch] in trainer.cc). Survivors can differ by one step (a collective completes
// on one rank and is aborted on another); the newest wins, so at most the interrupted step is
// lost. With no holder (a fresh job, every worker replaced, state that is not whole on one
// rank) or a committed checkpoint newer than every holder's step, the checkpoint is the
// fallback. PowerSGD without error feedback heals its iteration, RNG and Q memories.
// Thread model: plain values; exchangePeerState is a collective over `backend` (training thread).

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "worker/comm/backend.h"

namespace ddp::runtime {

struct PeerState {
  int64_t step = -1;   // optimizer steps done
  int worldSize = 0;   // of the generation that produced it
  int64_t generation = 0;
  std::map<std::string, std::string> sections;  // checkpoint section names and bytes

  std::string encode() const;
  static Result<PeerState> decode(std::string_view bytes);
};

// Collective (every rank of `backend`, same point): the newest state any rank passes in
// (`mine` may be null), from the lowest rank holding it; nullopt when no rank holds one.
// `source` (optional) receives that rank.
Result<std::optional<PeerState>> exchangePeerState(comm::Backend& backend, const PeerState* mine, Deadline deadline,
                                                   int* source = nullptr);

}  // namespace ddp::runtime
