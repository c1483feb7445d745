#pragma once
// The heartbeat's one JSON codec (heartbeat.h; docs/API.md, "Heartbeats"; Note [One heartbeat]):
// the worker encodes, the controller decodes tolerantly (the default: an older worker sends
// fewer fields, a field of another kind than a number where only numbers count is passed over,
// as the controller always did); the stand-in controllers of the tests decode strictly, so a
// field the worker stopped sending fails them. No exception leaves them.
// Thread model: pure functions.

#include <string>
#include <string_view>

#include "common/protocol/heartbeat.h"
#include "common/protocol/json_fields.h"
#include "common/status.h"

namespace ddp::protocol {

std::string encodeHeartbeat(const Heartbeat& h);
// InvalidArgument naming the field on a malformed body. `incarnation` is left empty (it is not
// on the wire).
Result<Heartbeat> decodeHeartbeat(std::string_view json, Reading reading = Reading::kTolerant);

// A phase-1 report as JSON (the phase-1 route's body and a heartbeat's `lastShard`): size and
// CRC when ok, the error otherwise.
Json shardOutcomeJson(const ShardOutcome& o);

}  // namespace ddp::protocol
