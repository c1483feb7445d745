#include "common/protocol/controller_codec.h"

#include "common/protocol/worker_codec.h"

namespace ddp::protocol {

ShardReport shardReportOf(const ShardOutcome& o) {
  return ShardReport{o.rank, o.ok, o.entry.bytes, o.entry.crc, o.snapshotSeconds, o.writeSeconds, o.error};
}

Result<ShardReport> decodeShardReport(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(ShardOutcome o, decodeShardOutcome(json));
  return shardReportOf(o);
}

}  // namespace ddp::protocol
