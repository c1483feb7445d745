// Outbox (controller/jobs/lifecycle/outbox.h): what is due to be written, and take() leaving it
// empty and clean.
#include "controller/jobs/lifecycle/outbox.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TEST(OutboxTest, FiguresWaitForThePeriodOtherChangesDoNot) {
  Outbox o;
  EXPECT_FALSE(o.due(true));
  o.figuresDirty = true;
  EXPECT_FALSE(o.due(false));
  EXPECT_TRUE(o.due(true));
  Outbox e;
  e.events.push_back({1, "Normal", "Created", "job created"});
  EXPECT_TRUE(e.due(false));
  Outbox c;
  c.catalog = std::vector<int64_t>{};
  EXPECT_TRUE(c.due(false)) << "an empty catalog is still a catalog to write";
  Outbox d;
  d.dirty = true;
  EXPECT_TRUE(d.due(false));
}

TEST(OutboxTest, TakeMovesEverythingOutAndLeavesItClean) {
  Outbox o;
  o.dirty = o.figuresDirty = true;
  o.events.push_back({1, "Normal", "Created", "job created"});
  o.checkpoints.push_back({100, 5, 10, 2, "/ckpt/step-100"});
  o.catalog = std::vector<int64_t>{100};
  o.flightRecords[7] = "{}";
  Outbox::Batch b = o.take();
  EXPECT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.checkpoints.size(), 1u);
  ASSERT_TRUE(b.catalog.has_value());
  EXPECT_EQ(*b.catalog, (std::vector<int64_t>{100}));
  EXPECT_EQ(b.flightRecords.size(), 1u);
  EXPECT_FALSE(o.due(true));
  EXPECT_TRUE(o.events.empty() && o.checkpoints.empty() && !o.catalog && o.flightRecords.empty());
}

}  // namespace
}  // namespace ddp::controller
