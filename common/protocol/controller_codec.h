#pragma once
// The controller's codec of the phase-1 shard report (controller_messages.h), read strictly.
// The heartbeat's decoder (read tolerantly) is heartbeat_codec.h; what the controller writes
// back (the heartbeat's answer, the checkpoint verdict) is encoded by worker_codec.h's
// encoders, the same functions whose decoders the worker uses.
// Thread model: pure functions.

#include <string_view>

#include "common/protocol/controller_messages.h"
#include "common/protocol/worker_messages.h"
#include "common/status.h"

namespace ddp::protocol {

// A shard report (the body of the phase-1 route) as the checkpoint ledger takes it.
Result<ShardReport> decodeShardReport(std::string_view json);
ShardReport shardReportOf(const ShardOutcome& o);

}  // namespace ddp::protocol
