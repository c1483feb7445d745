// JobRecord helpers and the JSON form of its nested parts (job_record.h, job_record_json.h).

#include "controller/store/job_record.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "controller/store/job_record_json.h"
#include "tests/unit/controller/job_store_test_util.h"

namespace ddp::controller {
namespace {

TEST(JobPhaseTest, NamesRoundTripExactly) {
  for (JobPhase p : {JobPhase::kPending, JobPhase::kRunning, JobPhase::kRestarting,
                     JobPhase::kSucceeded, JobPhase::kFailed, JobPhase::kCancelled}) {
    JobPhase parsed = JobPhase::kPending;
    ASSERT_TRUE(parseJobPhase(jobPhaseName(p), &parsed)) << jobPhaseName(p);
    EXPECT_EQ(parsed, p);
  }
  EXPECT_STREQ(jobPhaseName(JobPhase::kCancelled), "Cancelled");
  JobPhase out = JobPhase::kRunning;
  EXPECT_FALSE(parseJobPhase("pending", &out));
  EXPECT_FALSE(parseJobPhase("", &out));
  EXPECT_FALSE(parseJobPhase("Pending ", &out));
  EXPECT_EQ(out, JobPhase::kRunning);
}

TEST(JobPhaseTest, TerminalPhases) {
  EXPECT_FALSE(isTerminal(JobPhase::kPending));
  EXPECT_FALSE(isTerminal(JobPhase::kRunning));
  EXPECT_FALSE(isTerminal(JobPhase::kRestarting));
  EXPECT_TRUE(isTerminal(JobPhase::kSucceeded));
  EXPECT_TRUE(isTerminal(JobPhase::kFailed));
  EXPECT_TRUE(isTerminal(JobPhase::kCancelled));
}

TEST(JobRecordTest, SetConditionAddsThenUpdatesInPlace) {
  JobRecord job;
  EXPECT_TRUE(job.setCondition(kConditionCreated, true, "Submitted", "accepted", 10));
  EXPECT_TRUE(job.setCondition(kConditionRunning, true, "Started", "4 workers", 20));
  ASSERT_EQ(job.conditions.size(), 2u);
  EXPECT_EQ(job.conditions[1], (JobCondition{kConditionRunning, true, "Started", "4 workers", 20}));

  // Same status: reason/message change, lastTransitionMs stays.
  EXPECT_TRUE(job.setCondition(kConditionRunning, true, "Resumed", "3 workers", 30));
  EXPECT_EQ(*job.findCondition(kConditionRunning),
            (JobCondition{kConditionRunning, true, "Resumed", "3 workers", 20}));
  // Nothing changes: reported as such.
  EXPECT_FALSE(job.setCondition(kConditionRunning, true, "Resumed", "3 workers", 35));
  EXPECT_EQ(job.findCondition(kConditionRunning)->lastTransitionMs, 20);
  // Status flips: the transition time moves.
  EXPECT_TRUE(job.setCondition(kConditionRunning, false, "WorkerExited", "rank 1", 40));
  EXPECT_EQ(*job.findCondition(kConditionRunning),
            (JobCondition{kConditionRunning, false, "WorkerExited", "rank 1", 40}));
  EXPECT_EQ(job.conditions.size(), 2u);
  EXPECT_EQ(job.conditions[0].type, kConditionCreated);  // order kept
  EXPECT_EQ(job.findCondition(kConditionFailed), nullptr);
}

TEST(JobProgressTest, EqualityTreatsNanAsEqual) {
  JobProgress a, b;
  a.loss = b.loss = std::nan("");
  EXPECT_EQ(a, b);
  b.testAccuracy = 0.5;
  EXPECT_NE(a, b);
  a.testAccuracy = 0.5;
  EXPECT_EQ(a, b);
  a.loss = 1;
  EXPECT_NE(a, b);
}

TEST(JobRecordJsonTest, RoundTripsEveryField) {
  JobRecord job = testing::fullJob("j");
  EXPECT_EQ(*conditionsFromJson(conditionsToJson(job.conditions)), job.conditions);
  EXPECT_EQ(*workersFromJson(workersToJson(job.workers)), job.workers);
  EXPECT_EQ(*progressFromJson(progressToJson(job.progress)), job.progress);
  EXPECT_TRUE(conditionsFromJson(conditionsToJson({}))->empty());
  EXPECT_EQ(*progressFromJson(progressToJson(JobProgress{})), JobProgress{});
}

TEST(JobRecordJsonTest, DoublesKeepFullPrecisionAndNonFiniteValues) {
  JobProgress p;
  p.loss = 0.1 + 0.2;  // not representable in few digits
  p.samplesPerSecond = std::numeric_limits<double>::denorm_min();
  p.etaSeconds = std::numeric_limits<double>::max();
  p.testAccuracy = std::numeric_limits<double>::quiet_NaN();
  Result<JobProgress> back = progressFromJson(progressToJson(p));
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(back->loss, p.loss);
  EXPECT_EQ(back->samplesPerSecond, p.samplesPerSecond);
  EXPECT_EQ(back->etaSeconds, p.etaSeconds);
  ASSERT_TRUE(back->testAccuracy.has_value());
  EXPECT_TRUE(std::isnan(*back->testAccuracy));

  p.loss = -std::numeric_limits<double>::infinity();
  std::string text = progressToJson(p);
  EXPECT_NE(text.find("\"-Infinity\""), std::string::npos) << text;
  EXPECT_EQ(progressFromJson(text)->loss, p.loss);
}

TEST(JobRecordJsonTest, MissingKeysDefaultAndUnknownKeysAreIgnored) {
  Result<JobProgress> p = progressFromJson(R"({"step": 7, "future": [1, 2]})");
  ASSERT_TRUE(p.isOk()) << p.status();
  JobProgress want;
  want.step = 7;
  EXPECT_EQ(*p, want);
  Result<std::vector<WorkerRecord>> w = workersFromJson(R"([{"rank": 2, "extra": true}])");
  ASSERT_TRUE(w.isOk()) << w.status();
  ASSERT_EQ(w->size(), 1u);
  EXPECT_EQ((*w)[0].rank, 2);
  EXPECT_EQ((*w)[0].host, "");
}

TEST(JobRecordJsonTest, MalformedTextIsInvalidArgumentNotAnException) {
  EXPECT_EQ(conditionsFromJson("not json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(conditionsFromJson("{}").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(conditionsFromJson("[1]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(conditionsFromJson(R"([{"status": "yes"}])").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(workersFromJson(R"([{"pid": "12"}])").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(progressFromJson("[]").status().code(), StatusCode::kInvalidArgument);
  Status st = progressFromJson(R"({"loss": "lots"})").status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("progress"), std::string::npos) << st;
}

}  // namespace
}  // namespace ddp::controller
