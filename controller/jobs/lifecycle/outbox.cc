#include "controller/jobs/lifecycle/outbox.h"

#include <utility>

namespace ddp::controller {

bool Outbox::due(bool periodic) const {
  return dirty || (periodic && figuresDirty) || !events.empty() || !checkpoints.empty() || catalog.has_value() ||
         !flightRecords.empty();
}

Outbox::Batch Outbox::take() {
  Batch b{std::exchange(events, {}), std::exchange(checkpoints, {}), std::exchange(catalog, std::nullopt),
          std::exchange(flightRecords, {})};
  dirty = false;
  figuresDirty = false;
  return b;
}

}  // namespace ddp::controller
