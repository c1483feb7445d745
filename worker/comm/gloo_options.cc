#include "worker/comm/gloo_options.h"

namespace ddp::comm {

Status GlooOptions::validate() const {
  if (size < 1) return invalidArgument("GlooOptions.size must be >= 1, got " + std::to_string(size));
  if (rank < 0 || rank >= size) {
    return invalidArgument("GlooOptions.rank must be in [0, " + std::to_string(size) + "), got " +
                           std::to_string(rank));
  }
  if (prefix.empty()) return invalidArgument("GlooOptions.prefix must not be empty (it namespaces the generation)");
  if (hostname.empty()) return invalidArgument("GlooOptions.hostname must not be empty");
  if (timeout <= Duration::zero()) return invalidArgument("GlooOptions.timeout must be positive");
  if (connectTimeout <= Duration::zero()) return invalidArgument("GlooOptions.connectTimeout must be positive");
  if (watchdogPoll <= Duration::zero()) return invalidArgument("GlooOptions.watchdogPoll must be positive");
  if (flightRecords == 0) return invalidArgument("GlooOptions.flightRecords must be >= 1");
  return Status::ok();
}

}  // namespace ddp::comm
