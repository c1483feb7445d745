// Join with a test Joinable over LocalBackend (ranks as threads; real collectives on shared
// memory). The oracle is the sum each iteration would produce with only the active ranks.
#include "worker/join/join.h"

#include <gtest/gtest.h>

#include <mutex>

#include "tests/support/local_backend.h"
#include "tests/support/recording_backend.h"

namespace ddp::join {
namespace {

Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

// Each iteration allreduces (sums) a value; its main hook shadows that with a zero.
class SumJoinable final : public Joinable {
 public:
  SumJoinable(comm::Backend& pg, std::string name, std::vector<std::string>* log = nullptr)
      : pg_(pg), name_(std::move(name)), log_(log) {}

  Status iterate(float value) {
    DDP_ASSIGN_OR_RETURN(auto note, Join::notifyJoinContext(*this, soon()));
    DDP_RETURN_IF_ERROR(allreduceAdd(value));
    if (note) {
      DDP_ASSIGN_OR_RETURN(int active, note->activeRanks(soon()));
      activeSeen.push_back(active);
    }
    return Status::ok();
  }

  std::unique_ptr<JoinHook> joinHook(const JoinHookOptions& options) override {
    seenOptions = options;
    return std::make_unique<Hook>(*this);
  }
  Device joinDevice() const override { return Device::cpu(); }
  comm::Backend& joinProcessGroup() override { return pg_; }

  double total = 0;
  std::vector<int> activeSeen;
  std::vector<int> activeInShadow;  // Join::lastActiveCount() in each main hook
  std::optional<bool> lastJoiner;
  JoinHookOptions seenOptions;

 private:
  struct Hook final : JoinHook {
    explicit Hook(SumJoinable& j) : j(j) {}
    Status mainHook(Deadline) override {
      if (j.log_) j.log_->push_back(j.name_ + ":main");
      j.activeInShadow.push_back(j.joinConfig().join->lastActiveCount());
      return j.allreduceAdd(0.f);
    }
    Status postHook(bool isLast, Deadline) override {
      if (j.log_) j.log_->push_back(j.name_ + ":post");
      j.lastJoiner = isLast;
      return Status::ok();
    }
    SumJoinable& j;
  };

  Status allreduceAdd(float value) {
    float v = value;
    DDP_RETURN_IF_ERROR(pg_.allreduce(comm::viewOf(&v, 1), comm::ReduceOp::kSum)->wait(soon()));
    total += v;
    return Status::ok();
  }

  comm::Backend& pg_;
  std::string name_;
  std::vector<std::string>* log_;
};

float valueOf(int rank, int iter) { return static_cast<float>((rank + 1) * (iter + 1)); }

TEST(JoinTest, UnevenInputsWorld3NoHangAndSumsMatchOracle) {
  const std::vector<int> batches{20, 30, 25};
  double oracle = 0;
  std::vector<int> activeOracle;
  for (int i = 0; i < 30; ++i) {
    int active = 0;
    for (int r = 0; r < 3; ++r) {
      if (i < batches[r]) {
        oracle += valueOf(r, i);
        ++active;
      }
    }
    activeOracle.push_back(active);
  }
  std::vector<double> totals(3);
  std::vector<std::optional<bool>> last(3);
  std::vector<int> rounds(3);
  comm::runLocalRanks(3, [&](int rank, comm::Backend& pg) {
    SumJoinable j(pg, "sum");
    JoinOptions opts;
    opts.hookOptions.divideByInitialWorldSize = false;
    opts.hookOptions.extra["k"] = "v";
    auto join = Join::create({&j}, opts);
    ASSERT_TRUE(join.isOk()) << join.status();
    EXPECT_FALSE(j.seenOptions.divideByInitialWorldSize);  // hooks are made at create()
    for (int i = 0; i < batches[rank]; ++i) ASSERT_TRUE(j.iterate(valueOf(rank, i)).isOk());
    ASSERT_TRUE((*join)->finish(soon()).isOk());
    // The notify allreduce counted the active ranks of every iteration this rank ran.
    EXPECT_EQ(j.activeSeen, std::vector<int>(activeOracle.begin(), activeOracle.begin() + batches[rank]));
    EXPECT_FALSE(j.seenOptions.divideByInitialWorldSize);
    EXPECT_EQ(j.seenOptions.extra.at("k"), "v");
    std::vector<int> shadowOracle;
    for (int i = batches[rank]; i < 30; ++i) shadowOracle.push_back(activeOracle[i]);
    EXPECT_EQ(j.activeInShadow, shadowOracle);
    totals[rank] = j.total;
    last[rank] = j.lastJoiner;
    rounds[rank] = (*join)->rounds();
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_DOUBLE_EQ(totals[r], oracle) << "rank " << r;
    ASSERT_TRUE(last[r].has_value());
    EXPECT_EQ(*last[r], r == 1) << "rank " << r;
    EXPECT_EQ(rounds[r], 30 - batches[r]);
  }
}

TEST(JoinTest, ThrowModeFailsEveryRankWithinOneIteration) {
  const std::vector<int> batches{20, 30, 25};
  std::vector<int> failedAt(3, -1);
  std::vector<StatusCode> codes(3);
  comm::runLocalRanks(3, [&](int rank, comm::Backend& pg) {
    SumJoinable j(pg, "sum");
    JoinOptions opts;
    opts.throwOnEarlyTermination = true;
    auto join = Join::create({&j}, opts);
    ASSERT_TRUE(join.isOk());
    for (int i = 0; i < batches[rank]; ++i) {
      Status st = j.iterate(valueOf(rank, i));
      if (!st.isOk()) {
        failedAt[rank] = i;
        codes[rank] = st.code();
        return;
      }
    }
    Status st = (*join)->finish(soon());
    failedAt[rank] = batches[rank];
    codes[rank] = st.code();
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(failedAt[r], 20) << "rank " << r;  // rank 0 runs out after 20 batches
    EXPECT_EQ(codes[r], StatusCode::kAborted) << "rank " << r;
  }
}

TEST(JoinTest, DisabledJoinRunsPlainAndIssuesNothingExtra) {
  std::vector<size_t> opCounts(2);
  comm::runLocalRanks(2, [&](int rank, comm::Backend& inner) {
    comm::RecordingBackend pg(inner);
    SumJoinable j(pg, "sum");
    JoinOptions opts;
    opts.enable = false;
    auto join = Join::create({&j}, opts);
    ASSERT_TRUE(join.isOk());
    for (int i = 0; i < 7; ++i) ASSERT_TRUE(j.iterate(valueOf(rank, i)).isOk());
    ASSERT_TRUE((*join)->finish(soon()).isOk());
    EXPECT_TRUE(j.activeSeen.empty());
    EXPECT_FALSE(j.lastJoiner.has_value());
    opCounts[rank] = pg.ops().size();
  });
  EXPECT_EQ(opCounts, (std::vector<size_t>{7, 7}));
}

TEST(JoinTest, HooksRunInJoinableOrderAndOnlyTheFirstNotifies) {
  std::vector<std::string> logRank0;
  std::vector<size_t> allreduces(2);
  comm::runLocalRanks(2, [&](int rank, comm::Backend& inner) {
    comm::RecordingBackend pg(inner);
    std::vector<std::string> log;
    SumJoinable a(pg, "A", &log), b(pg, "B", &log);
    auto join = Join::create({&a, &b});
    ASSERT_TRUE(join.isOk());
    const int n = rank == 0 ? 2 : 4;
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(a.iterate(1.f).isOk());
      ASSERT_TRUE(b.iterate(1.f).isOk());
    }
    EXPECT_EQ(a.activeSeen.size(), static_cast<size_t>(n));
    EXPECT_TRUE(b.activeSeen.empty());  // the second joinable never notifies
    ASSERT_TRUE((*join)->finish(soon()).isOk());
    EXPECT_DOUBLE_EQ(a.total, 2 * 2 + 2 * 1);
    if (rank == 0) logRank0 = log;
    allreduces[rank] = pg.ops().size();
  });
  EXPECT_EQ(logRank0, (std::vector<std::string>{"A:main", "B:main", "A:main", "B:main", "A:post", "B:post"}));
  // Rank 1: 4 x (notify + A + B) + 1 final count; rank 0: 2 x 3 + 2 x (count + A + B) + 1.
  EXPECT_EQ(allreduces, (std::vector<size_t>{13, 13}));
}

TEST(JoinTest, MismatchedProcessGroupsAreRejected) {
  auto g1 = comm::makeLocalGroup(1), g2 = comm::makeLocalGroup(1);
  comm::LocalBackend b1(g1, 0), b2(g2, 0);
  SumJoinable a(b1, "a"), b(b2, "b");
  auto join = Join::create({&a, &b});
  EXPECT_EQ(join.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(join.status().message().find("share one process group"), std::string::npos) << join.status();
  EXPECT_EQ(Join::create({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.joinConfig().join, nullptr);
}

TEST(JoinTest, DestructionWithoutFinishDetachesJoinables) {
  auto g = comm::makeLocalGroup(1);
  comm::LocalBackend pg(g, 0);
  SumJoinable a(pg, "a");
  {
    auto join = Join::create({&a});
    ASSERT_TRUE(join.isOk());
    EXPECT_EQ(Join::create({&a}).status().code(), StatusCode::kFailedPrecondition);  // one Join at a time
    ASSERT_TRUE(a.iterate(1.f).isOk());
    EXPECT_EQ(a.activeSeen, std::vector<int>{1});
  }
  EXPECT_EQ(a.joinConfig().join, nullptr);
  ASSERT_TRUE(a.iterate(1.f).isOk());  // outside a Join: no notify
  EXPECT_EQ(a.activeSeen.size(), 1u);
  auto again = Join::create({&a});
  ASSERT_TRUE(again.isOk());
  ASSERT_TRUE((*again)->finish(soon()).isOk());
  EXPECT_EQ((*again)->finish(soon()).code(), StatusCode::kFailedPrecondition);
}

TEST(JoinTest, SkewWarningFiresOncePastTheThreshold) {
  std::vector<bool> warned(2);
  comm::runLocalRanks(2, [&](int rank, comm::Backend& pg) {
    SumJoinable j(pg, "sum");
    JoinOptions opts;
    opts.skewWarningRounds = 5;
    auto join = Join::create({&j}, opts);
    ASSERT_TRUE(join.isOk());
    for (int i = 0; i < (rank == 0 ? 2 : 9); ++i) ASSERT_TRUE(j.iterate(1.f).isOk());
    ASSERT_TRUE((*join)->finish(soon()).isOk());
    warned[rank] = (*join)->warnedSkew();
  });
  EXPECT_TRUE(warned[0]);   // 7 shadow rounds > 5
  EXPECT_FALSE(warned[1]);
}

}  // namespace
}  // namespace ddp::join
