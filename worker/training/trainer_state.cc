#include "worker/training/trainer_state.h"

#include "common/binary_io.h"

namespace ddp::runtime {
namespace {
constexpr uint32_t kTrainerStateMagic = 0x54525354;  // "TSRT"
}  // namespace

std::string TrainerState::encode() const {
  BinaryWriter w;
  w.put(step);
  w.put(epoch);
  w.put(seed);
  w.put(worldSize);
  w.put(batchSize);
  w.put(scheduleStep);
  return writeFramed(kTrainerStateMagic, 2, w.data());
}

Result<TrainerState> TrainerState::decode(std::string_view frame) {
  uint32_t version = 0;
  DDP_ASSIGN_OR_RETURN(std::string payload, readFramed(frame, kTrainerStateMagic, 2, &version, "trainer state"));
  BinaryReader r(payload, "trainer state");
  TrainerState s;
  DDP_RETURN_IF_ERROR(r.get(&s.step));
  DDP_RETURN_IF_ERROR(r.get(&s.epoch));
  DDP_RETURN_IF_ERROR(r.get(&s.seed));
  DDP_RETURN_IF_ERROR(r.get(&s.worldSize));
  DDP_RETURN_IF_ERROR(r.get(&s.batchSize));
  s.scheduleStep = static_cast<double>(s.step);
  if (version >= 2) DDP_RETURN_IF_ERROR(r.get(&s.scheduleStep));
  return s;
}

}  // namespace ddp::runtime
