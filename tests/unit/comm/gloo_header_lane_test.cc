// GlooHeaderLane (Note [Header lane]) over two real Gloo contexts on loopback: headers that
// agree or not, and an exchange blocked on a peer that never posts its header, which aborting the
// communicator's wait set releases without any signal to the transport (Note [Abortable waits]:
// the case of a pair that had already failed, where signalling cannot wake it).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "worker/comm/gloo_header_lane.h"
#include "worker/comm/gloo_wait_set.h"
#include "tests/support/gloo_harness.h"

namespace ddp::comm {
namespace {

using namespace std::chrono_literals;

TEST(GlooHeaderLaneTest, AgreeingAndDisagreeingHeaders) {
  auto contexts = test::connectGlooPair();
  std::vector<std::unique_ptr<GlooHeaderLane>> lanes;
  for (auto& c : contexts) {
    lanes.push_back(std::make_unique<GlooHeaderLane>(c, std::make_shared<GlooWaitSet>(), CommThreadPriority::kNormal));
  }
  for (int rank = 0; rank < 2; ++rank) {
    lanes[rank]->post(test::opHeader(1, 10), "op 1", 10000ms);
    lanes[rank]->post(test::opHeader(2, rank == 0 ? 10 : 11), "op 2", 10000ms);
  }
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(lanes[rank]->await(1, Deadline::after(10s), nullptr).isOk());
    Status st = lanes[rank]->await(2, Deadline::after(10s), nullptr);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find("op 2: ranks disagree"), std::string::npos) << st;
  }
}

TEST(GlooHeaderLaneTest, AbortingTheWaitSetReleasesAnExchangeWhosePeerNeverCame) {
  auto contexts = test::connectGlooPair();
  auto waits = std::make_shared<GlooWaitSet>();
  GlooHeaderLane lane(contexts[1], waits, CommThreadPriority::kNormal);
  lane.post(test::opHeader(1, 10), "op 1", 60000ms);  // rank 0 never posts op 1
  // The lane's thread is inside the exchange once its two buffers are registered.
  const Deadline started = Deadline::after(10s);
  while (waits->size() < 2 && !started.expired()) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(waits->size(), 2u) << "the exchange's buffers are not in the wait set";
  const auto t0 = std::chrono::steady_clock::now();
  waits->abort();
  Status st = lane.await(1, Deadline::after(20s), nullptr);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(st.code(), StatusCode::kAborted) << st;
  EXPECT_NE(st.message().find("op 1: header exchange aborted"), std::string::npos) << st;
  EXPECT_LT(waited, 5s) << "the exchange was not released by the abort";
  EXPECT_EQ(waits->size(), 0u);
  lane.stop();  // joins at once: nothing is blocked any more
}

}  // namespace
}  // namespace ddp::comm
