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
  a.loss = b.loss;
  for (auto field : {&JobProgress::valLoss, &JobProgress::tokensPerSecond, &JobProgress::mfu}) {
    JobProgress c = a;
    c.*field = 0.25;
    EXPECT_NE(a, c);
    JobProgress d = c;
    EXPECT_EQ(c, d);
  }
}

TEST(JobProgressTest, PerplexityIsExpOfTheValidationLoss) {
  JobProgress p;
  EXPECT_FALSE(p.perplexity().has_value());
  p.valLoss = 2.0;
  ASSERT_TRUE(p.perplexity().has_value());
  EXPECT_DOUBLE_EQ(*p.perplexity(), std::exp(2.0));
  p.valLoss = 0.0;
  EXPECT_DOUBLE_EQ(*p.perplexity(), 1.0);
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

// A progress record as the controller wrote it before the language-model figures: none of them.
TEST(JobRecordJsonTest, AnOlderProgressRecordHasNoLanguageModelFigures) {
  Result<JobProgress> p = progressFromJson(
      R"({"epoch":0,"epochs":3,"etaSeconds":12.5,"loss":0.52,"samplesPerSecond":9000.0,"step":120,)"
      R"("testAccuracy":null,"totalSteps":2814})");
  ASSERT_TRUE(p.isOk()) << p.status();
  EXPECT_EQ(p->step, 120);
  EXPECT_FALSE(p->valLoss.has_value());
  EXPECT_FALSE(p->tokensPerSecond.has_value());
  EXPECT_FALSE(p->mfu.has_value());
  // Written back without them; with them, they round-trip (a diverged NaN included).
  EXPECT_EQ(progressToJson(*p).find("valLoss"), std::string::npos);
  JobProgress lm = *p;
  lm.valLoss = std::nan("");
  lm.tokensPerSecond = 1.5e6;
  lm.mfu = 0.42;
  Result<JobProgress> back = progressFromJson(progressToJson(lm));
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(*back, lm);
  EXPECT_FALSE(progressFromJson(R"({"valLoss": "low"})").isOk()) << "a mistyped figure is an error";
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
