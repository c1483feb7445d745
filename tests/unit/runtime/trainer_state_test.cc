// TrainerState's frame: a round trip, and a version-1 frame (no scheduleStep) read as the
// position it names, with the schedule at its step.
#include "worker/training/trainer_state.h"

#include <gtest/gtest.h>

#include "common/binary_io.h"

namespace ddp::runtime {
namespace {

TEST(TrainerStateTest, RoundTrip) {
  TrainerState s;
  s.step = 123;
  s.epoch = 4;
  s.seed = 0xfeedfacecafebeefull;
  s.worldSize = 3;
  s.batchSize = 16;
  s.scheduleStep = 61.5;
  auto back = TrainerState::decode(s.encode());
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(back->step, 123);
  EXPECT_EQ(back->epoch, 4);
  EXPECT_EQ(back->seed, 0xfeedfacecafebeefull);
  EXPECT_EQ(back->worldSize, 3);
  EXPECT_EQ(back->batchSize, 16);
  EXPECT_EQ(back->scheduleStep, 61.5);
}

TEST(TrainerStateTest, VersionOneFrameHasTheScheduleAtItsStep) {
  BinaryWriter w;
  w.put(int64_t{40});
  w.put(int32_t{1});
  w.put(uint64_t{7});
  w.put(int32_t{2});
  w.put(int32_t{32});
  auto s = TrainerState::decode(writeFramed(0x54525354, 1, w.data()));
  ASSERT_TRUE(s.isOk()) << s.status();
  EXPECT_EQ(s->step, 40);
  EXPECT_EQ(s->epoch, 1);
  EXPECT_EQ(s->seed, 7u);
  EXPECT_EQ(s->worldSize, 2);
  EXPECT_EQ(s->batchSize, 32);
  EXPECT_EQ(s->scheduleStep, 40.0);
}

TEST(TrainerStateTest, DamagedFrameIsRefused) {
  std::string frame = TrainerState{}.encode();
  frame[frame.size() - 1] ^= 0x5a;
  EXPECT_FALSE(TrainerState::decode(frame).isOk());
  EXPECT_FALSE(TrainerState::decode(frame.substr(0, 6)).isOk());
}

}  // namespace
}  // namespace ddp::runtime
