#pragma once
// The JSON codecs of the worker's messages (worker_messages.h; docs/API.md, "Worker routes"),
// both directions: the worker encodes its requests and decodes the controller's answers; the
// stand-in controllers of the tests do the reverse. Pure functions; no exception leaves them
// (parsing without exceptions, every field checked before use, invalid UTF-8 replaced when
// encoding). Decoders read strictly (json_fields.h) and return InvalidArgument naming the
// missing or mistyped field; unknown fields are ignored (later versions add some).
// Thread model: pure functions.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/protocol/heartbeat_codec.h"  // the heartbeat itself
#include "common/protocol/worker_messages.h"
#include "common/status.h"

namespace ddp::protocol {

std::string encodeRegistrationRequest(const std::string& workerId, const std::string& host,
                                      const std::string& advertiseAddress, int64_t pid, const Rejoin& rejoin = {});
Result<Registration> decodeRegistration(std::string_view json);
std::string encodeAssignment(const Assignment& a);
Result<Assignment> decodeAssignment(std::string_view json);
std::string encodeHeartbeatAnswer(const HeartbeatAnswer& a);
Result<HeartbeatAnswer> decodeHeartbeatAnswer(std::string_view json);
// Phase 1 and phase 2 of the checkpoint commit, and the controller's verdict.
std::string encodeShardOutcome(const ShardOutcome& o);
Result<ShardOutcome> decodeShardOutcome(std::string_view json);
std::string encodeCommitOutcome(const CommitOutcome& o);
Result<CommitOutcome> decodeCommitOutcome(std::string_view json);
std::string encodeCommitVerdict(const CommitVerdictWire& v);
Result<CommitVerdictWire> decodeCommitVerdict(std::string_view json);

}  // namespace ddp::protocol
