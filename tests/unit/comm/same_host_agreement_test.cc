// The same-host agreement (Note [Same-host agreement]) over a real InMemoryStore: two ranks of
// this process agree on cross-memory reads and the futex page, and the page works; a rank on
// another kernel, a failed probe and a page only one rank could not map (published by hand, as
// another process would) each give every rank the same answer and a reason; a silent peer is the
// store's deadline, not a hang.
#include "worker/comm/same_host_agreement.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/store/in_memory_store.h"

namespace ddp::comm {
namespace {

using namespace std::chrono_literals;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(SameHostAgreementTest, TwoRanksOfOneProcessAgreeOnReadsAndThePage) {
  InMemoryStore store;
  std::vector<SameHostPaths> agreed(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      auto a = agreeSameHost(store, "g", r, 2, Deadline::after(10s));
      ASSERT_TRUE(a.isOk()) << a.status();
      agreed[static_cast<size_t>(r)] = *a;
    });
  }
  for (auto& t : threads) t.join();
  for (const SameHostPaths& a : agreed) {
    EXPECT_NE(a.memory, nullptr) << a.summary;
    EXPECT_NE(a.words, nullptr) << a.summary;
    EXPECT_TRUE(contains(a.summary, "in phases over shared memory")) << a.summary;
  }
  ASSERT_TRUE(agreed[0].words && agreed[1].words);
  std::vector<uint64_t> w0 = {7, 0}, w1 = {0, 9};
  std::thread other([&] { agreed[1].words->allgather(w1, Deadline::after(10s), nullptr); });
  agreed[0].words->allgather(w0, Deadline::after(10s), nullptr);
  other.join();
  EXPECT_EQ(w0, (std::vector<uint64_t>{7, 9}));
  EXPECT_EQ(w1, w0);
}

// Rank 0 runs here; rank 1's keys are published by hand.
class SameHostAgreementByHandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto id = thisProcess();
    ASSERT_TRUE(id.isOk()) << id.status();
    self_ = *id;
  }
  SameHostPaths agreeAsRank0(const std::string& prefix, const HostIdentity& rank1, const std::string& verdict1) {
    EXPECT_TRUE(store_.set(prefix + "/xmem/host/1", rank1.encode()).isOk());
    if (!verdict1.empty()) EXPECT_TRUE(store_.set(prefix + "/xmem/probe/1", verdict1).isOk());
    auto a = agreeSameHost(store_, prefix, 0, 2, Deadline::after(10s));
    EXPECT_TRUE(a.isOk()) << a.status();
    return a.isOk() ? *a : SameHostPaths{};
  }
  InMemoryStore store_;
  HostIdentity self_;
};

TEST_F(SameHostAgreementByHandTest, ARankOnAnotherKernelMeansTcpOnly) {
  HostIdentity other = self_;
  other.bootId = "another-kernel";
  const SameHostPaths a = agreeAsRank0("h", other, "");
  EXPECT_EQ(a.memory, nullptr);
  EXPECT_EQ(a.words, nullptr);
  EXPECT_TRUE(contains(a.summary, "TCP only: the ranks do not share one host")) << a.summary;
}

TEST_F(SameHostAgreementByHandTest, AFailedProbeMeansTcpOnlyNamingTheRank) {
  const SameHostPaths a = agreeAsRank0("i", self_, "operation not permitted");
  EXPECT_EQ(a.memory, nullptr);
  EXPECT_TRUE(contains(a.summary, "rank 1 cannot read its peers' memory: operation not permitted")) << a.summary;
}

TEST_F(SameHostAgreementByHandTest, APageOneRankCouldNotMapMeansPhasesOverTcp) {
  const SameHostPaths a = agreeAsRank0("j", self_, "ok cannot open rank 0's shared-words page");
  EXPECT_NE(a.memory, nullptr);
  EXPECT_EQ(a.words, nullptr);
  EXPECT_TRUE(contains(a.summary, "from 4 MiB read peers' memory, in phases over TCP")) << a.summary;
  EXPECT_TRUE(contains(a.summary, "rank 1 cannot map the shared page: cannot open rank 0's")) << a.summary;
  // What rank 0 offered: its page's descriptor, before its host identity.
  auto words = store_.get("j/xmem/words", Deadline::after(1s));
  ASSERT_TRUE(words.isOk());
  EXPECT_GE(std::stoi(*words), 0) << *words;
}

TEST_F(SameHostAgreementByHandTest, ASilentPeerIsTheStoresDeadline) {
  auto a = agreeSameHost(store_, "k", 0, 2, Deadline::after(200ms));
  EXPECT_FALSE(a.isOk());
}

}  // namespace
}  // namespace ddp::comm
