#pragma once
// Start-of-training agreement between replicas: every rank registered the same parameters
// (shapes and dtypes, in the same order), and every rank starts from rank 0's values.
// Both are collectives: every rank calls them in the same order.
// Thread model: called by the training thread; blocks until done or the deadline passes.

#include <functional>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/comm/backend.h"
#include "worker/core/parameter.h"

namespace ddp {

// Checks that every rank registered the same number of parameters with the same shapes and
// dtypes. One allgather of (hash, count) in the common case; on a mismatch a second allgather
// of per-parameter descriptors names the first mismatching parameter and the ranks, e.g.
// "parameter 3 ('fc1.weight'): rank 0 has [4, 8] f32, rank 2 has [8, 4] f32". Every rank returns
// the same InvalidArgument.
Status verifyParameterSignatures(comm::Backend& backend, const std::vector<Parameter*>& params, Deadline deadline);

// Overwrites each view with rank `root`'s contents (one broadcast per view, all in flight at
// once, then waited).
Status broadcastFrom(comm::Backend& backend, const std::vector<comm::BufferView>& views, int root, Deadline deadline);

// Runs `op` on buffers the backend accepts and waits for it: the `host` views themselves when the
// backend takes CPU memory, else copies on `device` (copied in before, every one copied back
// after), as a GPU-only backend (NCCL) needs for the reducer's small control collectives.
Status runStaged(comm::Backend& backend, Device device, const std::vector<comm::BufferView>& host,
                 const std::function<comm::WorkPtr(const std::vector<comm::BufferView>&)>& op, Deadline deadline);
// The device to stage on for `params`: the first CUDA parameter's, else cuda:0.
Device stagingDevice(const std::vector<Parameter*>& params);

}  // namespace ddp
