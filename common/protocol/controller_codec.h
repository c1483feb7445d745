#pragma once
// The controller's codecs of the protocol (controller_messages.h; docs/API.md, "Heartbeats"):
// a heartbeat read tolerantly (Reading::kTolerant in json_fields.h: an older worker sends
// fewer fields; unknown fields are ignored), a phase-1 shard report read strictly. What the
// controller writes back (the heartbeat's answer, the checkpoint verdict) is encoded by
// worker_codec.h's encoders, the same functions whose decoders the worker uses.
// Thread model: pure functions.

#include <string_view>

#include "common/protocol/controller_messages.h"
#include "common/protocol/worker_messages.h"
#include "common/status.h"

namespace ddp::protocol {

// InvalidArgument naming the field on a malformed body.
Result<Heartbeat> decodeHeartbeat(std::string_view json);
// A shard report (the body of the phase-1 route) as the checkpoint ledger takes it.
Result<ShardReport> decodeShardReport(std::string_view json);
ShardReport shardReportOf(const ShardOutcome& o);

}  // namespace ddp::protocol
