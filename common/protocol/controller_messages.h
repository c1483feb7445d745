#pragma once
// The protocol's messages as only the controller holds them (docs/API.md, "Worker routes"): a
// rank's phase-1 shard report as the checkpoint ledger takes it. The heartbeat, one struct for
// both sides, is heartbeat.h; the worker's messages are worker_messages.h.
// Thread model: plain values.

#include <cstdint>
#include <string>

namespace ddp::protocol {

// One rank's phase-1 report of the two-phase checkpoint commit (Note [Two-phase checkpoint
// commit] in controller/jobs/checkpoints/checkpoint_ledger.h).
struct ShardReport {
  int rank = 0;
  bool ok = false;
  uint64_t bytes = 0;
  uint32_t crc = 0;
  double snapshotSeconds = 0;  // the training thread's stall: state copied into memory
  double writeSeconds = 0;     // the background write (encode, write, fsync)
  std::string error;           // !ok: why the shard could not be written
};

}  // namespace ddp::protocol
