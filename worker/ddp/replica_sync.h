#pragma once
// Start-of-training agreement between replicas: every rank registered the same parameters
// (shapes and dtypes, in the same order), and every rank starts from rank 0's values.
// Both are collectives: every rank calls them in the same order.
// Thread model: called by the training thread; blocks until done or the deadline passes.

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

}  // namespace ddp
