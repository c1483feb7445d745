#pragma once
// The controller's names for the protocol's heartbeat messages: the heartbeat (one struct for
// both sides), its codec and the answer's encoder live in common/protocol/ (heartbeat.h,
// heartbeat_codec.h, worker_codec.h), shared with the worker's side and round-trip tested there.
// Thread model: plain values and pure functions.

#include "common/protocol/controller_codec.h"
#include "common/protocol/heartbeat_codec.h"
#include "common/protocol/worker_codec.h"
// The pure cores a heartbeat feeds (their headers name its parts: CollectiveView, FlightOp,
// ShardReport).
#include "controller/jobs/checkpoints/checkpoint_ledger.h"
#include "controller/jobs/hang/flight_records.h"
#include "controller/jobs/hang/hang_detector.h"

namespace ddp::controller {

using protocol::Command;
using protocol::CommandType;
using protocol::commandTypeName;
using protocol::Heartbeat;
using protocol::HeartbeatCheckpoint;
using protocol::LastShardReport;

}  // namespace ddp::controller
