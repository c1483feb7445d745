// The command word (command_word.h): its pure decisions, and its agreement over LocalBackend
// ranks for world sizes 1-4 against the single-process oracle (every rank sees the OR of the
// ranks' flags).
#include "worker/training/command_word.h"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "common/split_mix_rng.h"
#include "tests/support/local_backend.h"

namespace ddp::runtime {
namespace {

constexpr Duration kWait = std::chrono::seconds(30);

TEST(CommandWordTest, StopWinsAndCheckpointAloneCheckpoints) {
  EXPECT_EQ(commandAction({false, false}), CommandAction::kNone);
  EXPECT_EQ(commandAction({false, true}), CommandAction::kCheckpoint);
  EXPECT_EQ(commandAction({true, false}), CommandAction::kStop);
  EXPECT_EQ(commandAction({true, true}), CommandAction::kStop);
}

// The due steps over a run of n steps are the multiples of everySteps: floor(n / everySteps) of
// them, the last at most everySteps - 1 steps before any step a stop is asked during.
TEST(CommandWordTest, DueOnEveryNthStepAndNeverWithJoin) {
  const int64_t n = 100;
  for (int every : {1, 2, 3, 7, 100, 101}) {
    int64_t due = 0, last = 0;
    for (int64_t step = 1; step <= n; ++step) {
      if (commandWordDue(step, every, false)) {
        ++due;
        EXPECT_EQ(step - last, every);
        last = step;
      }
      EXPECT_FALSE(commandWordDue(step, every, true));
    }
    EXPECT_EQ(due, n / every) << "every " << every;
  }
}

// Each rank draws its words for 20 rounds from its own seed; the oracle is the OR over ranks,
// computed here from the same seeds.
TEST(CommandWordTest, EveryRankGetsTheOrOfTheRanksWords) {
  constexpr int kRounds = 20;
  auto wordOf = [](int rank, int round) {
    SplitMixRng rng(static_cast<uint64_t>(rank * 1000 + round));
    const uint64_t bits = rng.next();
    return CommandWord{(bits & 7) == 0, (bits & 24) == 8};  // stop 1 in 8, checkpoint 1 in 4
  };
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE("world " + std::to_string(world));
    std::vector<CommandWord> expected(kRounds);
    for (int round = 0; round < kRounds; ++round) {
      for (int r = 0; r < world; ++r) {
        expected[round].stop = expected[round].stop || wordOf(r, round).stop;
        expected[round].checkpointNow = expected[round].checkpointNow || wordOf(r, round).checkpointNow;
      }
    }
    std::mutex mu;
    std::vector<std::vector<CommandWord>> seen(static_cast<size_t>(world));
    comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
      CommandWordAgreement agreement;
      for (int round = 0; round < kRounds; ++round) {
        agreement.issue(backend, wordOf(rank, round));
        auto agreed = agreement.await(Deadline::after(kWait));
        ASSERT_TRUE(agreed.isOk()) << agreed.status();
        std::lock_guard<std::mutex> lock(mu);
        seen[static_cast<size_t>(rank)].push_back(*agreed);
      }
    });
    for (int r = 0; r < world; ++r) {
      ASSERT_EQ(seen[r].size(), static_cast<size_t>(kRounds));
      for (int round = 0; round < kRounds; ++round) {
        EXPECT_EQ(seen[r][round].stop, expected[round].stop) << "rank " << r << " round " << round;
        EXPECT_EQ(seen[r][round].checkpointNow, expected[round].checkpointNow) << "rank " << r << " round " << round;
      }
    }
  }
}

// Join's epoch-boundary stop: one rank asking is a stop for all; none asking is none.
TEST(CommandWordTest, StopAtEpochEndIsAgreedByAll) {
  for (int world : {1, 2, 3, 4}) {
    for (int asker = -1; asker < world; ++asker) {
      std::vector<int> got(static_cast<size_t>(world), -1);
      comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
        CommandWordAgreement agreement;
        auto stop = agreement.agreeOnStop(backend, rank == asker, Deadline::after(kWait));
        ASSERT_TRUE(stop.isOk()) << stop.status();
        got[static_cast<size_t>(rank)] = *stop ? 1 : 0;
      });
      for (int r = 0; r < world; ++r) EXPECT_EQ(got[r], asker >= 0 ? 1 : 0) << "world " << world << " asker " << asker;
    }
  }
}

TEST(CommandWordTest, AwaitWithoutIssueIsRefused) {
  CommandWordAgreement agreement;
  auto r = agreement.await(Deadline::after(kWait));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
}

// A failed collective (a peer aborted) comes back as the step's error, with its context.
TEST(CommandWordTest, AFailedAgreementIsAnError) {
  comm::runLocalRanks(2, [&](int rank, comm::Backend& backend) {
    if (rank == 1) {
      backend.abort(abortedError("test: rank 1 goes away"));
      return;
    }
    CommandWordAgreement agreement;
    agreement.issue(backend, {false, false});
    auto r = agreement.await(Deadline::after(kWait));
    ASSERT_FALSE(r.isOk());
    EXPECT_NE(r.status().message().find("stop-flag allreduce"), std::string::npos) << r.status();
  });
}

}  // namespace
}  // namespace ddp::runtime
