// ddpctl's pure formatting: tables, ages, the progress line, describe and YAML output, from
// job objects shaped like docs/API.md's.
#include "tools/ddpctl/output_format.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace ddp::ddpctl {
namespace {

constexpr int64_t kCreated = 1795428000;  // 2026-11-23T10:00:00Z

Json runningJob() {
  return Json::parse(R"({
    "metadata": {"name": "fashion-mnist", "uid": "u-1", "creationTimestamp": "2026-11-23T10:00:00Z",
                 "labels": {"team": "ml"}},
    "spec": {"workers": {"count": 2, "min": 2, "max": 2}, "device": "cpu", "threadsPerWorker": 1,
             "model": {"type": "mlp", "hidden": [256, 256], "activation": "relu"},
             "data": {"dataset": "fashion-mnist", "dir": "/data/fm", "batchSize": 64, "limit": 0},
             "optimizer": {"type": "sgd", "lr": 0.01, "momentum": 0.9, "weightDecay": 0.0,
                           "schedule": {"type": "constant"}},
             "commHook": {"type": "powerSGD", "wrapper": "fp16", "powerSGD": {"rank": 2, "startIter": 10}},
             "epochs": 3, "checkpoint": {"dir": "/ckpt", "everySteps": 100, "keep": 3},
             "maxRestarts": 3},
    "status": {
      "phase": "Running",
      "conditions": [{"type": "Created", "status": "True", "reason": "JobCreated", "message": "job accepted",
                      "lastTransitionTime": "2026-11-23T10:00:00Z"},
                     {"type": "Running", "status": "True", "reason": "WorkersRunning", "message": "2 workers",
                      "lastTransitionTime": "2026-11-23T10:00:30Z"}],
      "startTime": "2026-11-23T10:00:30Z", "completionTime": null, "generation": 1, "restarts": 0,
      "workers": [{"rank": 0, "id": "fashion-mnist-w0", "host": "127.0.0.1", "pid": 1234, "state": "Running",
                   "lastHeartbeat": "2026-11-23T10:04:58Z", "step": 120},
                  {"rank": 1, "id": "fashion-mnist-w1", "host": "127.0.0.1", "pid": 1235, "state": "Running",
                   "lastHeartbeat": "2026-11-23T10:04:59Z", "step": 120}],
      "progress": {"step": 120, "totalSteps": 2814, "epoch": 0, "epochs": 3, "loss": 0.52,
                   "samplesPerSecond": 9000.0, "testAccuracy": null, "etaSeconds": 200.4}
    }
  })");
}

TEST(Rfc3339, ParsesUtcFractionsAndOffsets) {
  EXPECT_EQ(parseRfc3339("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parseRfc3339("2026-11-23T10:00:00Z"), kCreated);
  EXPECT_EQ(parseRfc3339("2026-11-23T10:00:00.123456Z"), kCreated);
  EXPECT_EQ(parseRfc3339("2026-11-23T12:30:00+02:30"), kCreated);
  EXPECT_EQ(parseRfc3339("2000-02-29T23:59:59Z"), 951868799);  // leap day
  EXPECT_EQ(parseRfc3339("1969-12-31T00:00:00Z"), -86400);
  EXPECT_EQ(parseRfc3339(""), std::nullopt);
  EXPECT_EQ(parseRfc3339("2026-11-23"), std::nullopt);
  EXPECT_EQ(parseRfc3339("2026-11-23T10:00:00"), std::nullopt);  // no zone
  EXPECT_EQ(parseRfc3339("2026-13-23T10:00:00Z"), std::nullopt);
  EXPECT_EQ(parseRfc3339("2026-11-23T10:00:00Zjunk"), std::nullopt);
}

TEST(FormatAge, UsesKubectlUnits) {
  EXPECT_EQ(formatAge(-3), "0s");  // clock skew
  EXPECT_EQ(formatAge(0), "0s");
  EXPECT_EQ(formatAge(5), "5s");
  EXPECT_EQ(formatAge(59), "59s");
  EXPECT_EQ(formatAge(60), "1m");
  EXPECT_EQ(formatAge(3 * 60 + 59), "3m");
  EXPECT_EQ(formatAge(2 * 3600 + 59 * 60), "2h");
  EXPECT_EQ(formatAge(4 * 86400 + 3600), "4d");
  EXPECT_EQ(formatAge(400 * 86400), "1y");
}

TEST(FormatSeconds, KeepsTwoUnits) {
  EXPECT_EQ(formatSeconds(12.3), "12s");
  EXPECT_EQ(formatSeconds(200), "3m20s");
  EXPECT_EQ(formatSeconds(180), "3m");
  EXPECT_EQ(formatSeconds(7500), "2h5m");
  EXPECT_EQ(formatSeconds(97200), "1d3h");
  EXPECT_EQ(formatSeconds(-1), "-");
}

TEST(JobTable, FullJobAndJobWithMissingFields) {
  Json jobs = Json::array({runningJob(), Json::parse(R"({"metadata": {"name": "bare"}})")});
  EXPECT_EQ(renderTable(jobTable(jobs, kCreated + 300, /*wide=*/false)),
            "NAME            PHASE     WORKERS   STEP       PROGRESS   LOSS     ACCURACY   AGE\n"
            "fashion-mnist   Running   2/2       120/2814   4%         0.5200   -          5m\n"
            "bare            -         -         -          -          -        -          -\n");
}

// A job whose last checkpoint failed says so beside its phase (its CheckpointsFailing condition
// is True); a False one (a commit since) adds nothing.
TEST(JobTable, APhaseWithFailingCheckpointsSaysSo) {
  Json failing = runningJob();
  failing["status"]["phase"] = "Succeeded";
  failing["status"]["conditions"] = Json::parse(
      R"([{"type": "Succeeded", "status": "True"},
          {"type": "CheckpointsFailing", "status": "True", "reason": "CheckpointAbandoned", "message": "disk full"}])");
  Json recovered = failing;
  recovered["metadata"]["name"] = "recovered";
  recovered["status"]["conditions"][1]["status"] = "False";
  Table t = jobTable(Json::array({failing, recovered}), kCreated + 300, false);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][1], "Succeeded (checkpoints failing)");
  EXPECT_EQ(t.rows[1][1], "Succeeded");
}

TEST(JobTable, NullsEmptyListsAndWrongTypesShowDashes) {
  Json job = Json::parse(R"({"metadata": {"name": "odd", "creationTimestamp": "not a time"},
                             "spec": {"workers": {"count": "two"}},
                             "status": {"phase": null, "workers": [], "progress": {"step": "x", "loss": null}}})");
  Table t = jobTable(Json::array({job}), kCreated, false);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"odd", "-", "-", "-", "-", "-", "-", "-"}));
}

TEST(JobTable, WideAddsGenerationRestartsAndEta) {
  Json job = runningJob();
  job["status"]["progress"]["testAccuracy"] = 0.8731;
  job["status"]["workers"][1]["state"] = "Joining";
  Table t = jobTable(Json::array({job}), kCreated + 3 * 3600, /*wide=*/true);
  EXPECT_EQ(t.header.back(), "ETA");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"fashion-mnist", "Running", "1/2", "120/2814", "4%", "0.5200",
                                                 "87.3%", "3h", "1", "0", "3m20s"}));
  job["status"]["phase"] = "Succeeded";  // no ETA once finished
  EXPECT_EQ(jobTable(Json::array({job}), kCreated, true).rows[0].back(), "-");
}

TEST(RenderTable, AlignsByCodePointsAndIndents) {
  Table t{{"A", "B"}, {{"é…", "x"}, {"long cell", "y"}}};
  EXPECT_EQ(renderTable(t, 2), "  A           B\n  é…          x\n  long cell   y\n");
}

TEST(CheckpointTable, ListsEveryField) {
  Json list = Json::parse(R"([{"step": 100, "time": "2026-11-23T10:01:00Z", "bytes": 2345678, "worldSize": 2,
                               "path": "/ckpt/step-100"}, {"step": 200}])");
  EXPECT_EQ(renderTable(checkpointTable(list)),
            "STEP   TIME                   BYTES     WORLD-SIZE   PATH\n"
            "100    2026-11-23T10:01:00Z   2345678   2            /ckpt/step-100\n"
            "200    -                      -         -            -\n");
}

TEST(ProgressBar, FillsInProportionAndClamps) {
  EXPECT_EQ(progressBar(0.0, 10), "[----------]");
  EXPECT_EQ(progressBar(0.5, 10), "[#####-----]");
  EXPECT_EQ(progressBar(0.99, 10), "[#########-]");
  EXPECT_EQ(progressBar(1.0, 10), "[##########]");
  EXPECT_EQ(progressBar(7.0, 4), "[####]");
  EXPECT_EQ(progressBar(-1.0, 4), "[----]");
}

TEST(ProgressLine, ShowsStepPercentLossSpeedAndEta) {
  EXPECT_EQ(progressLine(runningJob(), 10),
            "Running    [----------]  120/2814    4.3%  loss 0.5200  9000 samples/s  ETA 3m20s");
  Json done = runningJob();
  done["status"]["phase"] = "Succeeded";
  done["status"]["progress"]["step"] = 2814;
  EXPECT_EQ(progressLine(done, 10), "Succeeded  [##########]  2814/2814  100.0%  loss 0.5200  9000 samples/s");
  Json restarting = runningJob();
  restarting["status"]["phase"] = "Restarting";
  restarting["status"]["generation"] = 2;
  EXPECT_NE(progressLine(restarting, 10).find("generation 2"), std::string::npos);
}

TEST(ProgressLine, PendingJobWaitsForWorkers) {
  Json pending = Json::parse(R"({"metadata": {"name": "p"}, "spec": {"workers": {"count": 3}},
                                 "status": {"phase": "Pending", "progress": null,
                                            "workers": [{"rank": 0, "state": "Running"}]}})");
  EXPECT_EQ(progressLine(pending), "Pending    waiting for workers (1/3 running)");
  // The controller sends a zeroed progress object before the first heartbeat.
  pending["status"]["progress"] = {{"step", 0}, {"totalSteps", 0}, {"loss", nullptr}, {"samplesPerSecond", 0.0},
                                   {"etaSeconds", 0.0}};
  EXPECT_EQ(progressLine(pending), "Pending    waiting for workers (1/3 running)");
}

TEST(ProgressLine, JobThatNeverStepped) {
  Json job = Json::parse(R"({"metadata": {"name": "p"}, "status": {"phase": "Cancelled",
      "conditions": [{"type": "Cancelled", "status": "True", "message": "cancelled by the user"}],
      "progress": {"step": 0, "totalSteps": 0, "loss": 0.0, "samplesPerSecond": 0.0}}})");
  EXPECT_EQ(progressLine(job), "Cancelled  before the first step");
  EXPECT_EQ(watchSummary(job), "job p Cancelled before the first step (cancelled by the user)");
  Table t = jobTable(Json::array({job}), kCreated, false);
  EXPECT_EQ(t.rows[0][3], "-");  // STEP
  EXPECT_EQ(t.rows[0][5], "-");  // LOSS
  job["status"]["phase"] = "Running";
  EXPECT_EQ(progressLine(job), "Running    starting (workers - running)");
}

TEST(ProgressLine, NoSpeedMeansNoEta) {
  Json job = runningJob();
  job["status"]["progress"]["samplesPerSecond"] = 0.0;
  EXPECT_EQ(progressLine(job, 10), "Running    [----------]  120/2814    4.3%  loss 0.5200");
  EXPECT_EQ(jobTable(Json::array({job}), kCreated, /*wide=*/true).rows[0].back(), "-");
}

TEST(WatchSummary, NamesOutcomeAccuracyAndDuration) {
  Json job = runningJob();
  job["status"]["phase"] = "Succeeded";
  job["status"]["progress"]["step"] = 2814;
  job["status"]["progress"]["testAccuracy"] = 0.873;
  job["status"]["completionTime"] = "2026-11-23T10:01:42Z";
  EXPECT_EQ(watchSummary(job),
            "job fashion-mnist Succeeded: step 2814/2814, loss 0.5200, test accuracy 87.3%, took 1m12s");
  job["status"]["phase"] = "Failed";
  job["status"]["progress"]["testAccuracy"] = nullptr;
  job["status"]["conditions"].push_back(
      {{"type", "Failed"}, {"status", "True"}, {"reason", "WorkerFailed"}, {"message", "rank 1 exited 3"}});
  EXPECT_EQ(watchSummary(job),
            "job fashion-mnist Failed: step 2814/2814, loss 0.5200, test accuracy n/a, took 1m12s (rank 1 exited 3)");
}

// A language model's figures as the controller reports them (docs/API.md, "The job object").
Json languageModelJob() {
  Json job = runningJob();
  job["metadata"]["name"] = "gpt";
  Json& p = job["status"]["progress"];
  p["valLoss"] = 2.25;
  p["perplexity"] = 9.487735836358526;  // exp(2.25)
  p["tokensPerSecond"] = 81920.4;
  p["mfu"] = 0.4213;
  return job;
}

TEST(LanguageModelFigures, GetWatchAndDescribeShowThemWhenPresent) {
  const Json gpt = languageModelJob();
  Table t = jobTable(Json::array({gpt}), kCreated + 60, /*wide=*/false);
  EXPECT_EQ(t.header, (std::vector<std::string>{"NAME", "PHASE", "WORKERS", "STEP", "PROGRESS", "LOSS", "VAL-LOSS",
                                                "ACCURACY", "AGE"}));
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"gpt", "Running", "2/2", "120/2814", "4%", "0.5200", "2.2500", "-",
                                                 "1m"}));
  Table w = jobTable(Json::array({gpt, runningJob()}), kCreated + 60, /*wide=*/true);
  EXPECT_EQ(w.header.size(), 14u);
  EXPECT_EQ(std::vector<std::string>(w.header.end() - 2, w.header.end()), (std::vector<std::string>{"TOKENS/S", "MFU"}));
  EXPECT_EQ(std::vector<std::string>(w.rows[0].end() - 2, w.rows[0].end()), (std::vector<std::string>{"81920", "42.1%"}));
  EXPECT_EQ(std::vector<std::string>(w.rows[1].end() - 2, w.rows[1].end()), (std::vector<std::string>{"-", "-"}));
  EXPECT_EQ(w.rows[1][6], "-") << "an MLP beside a language model: no validation loss";

  EXPECT_EQ(progressLine(gpt, 10),
            "Running    [----------]  120/2814    4.3%  loss 0.5200  val loss 2.2500 (ppl 9.49)  9000 samples/s  "
            "81920 tokens/s  MFU 42.1%  ETA 3m20s");

  Json done = gpt;
  done["status"]["phase"] = "Succeeded";
  done["status"]["completionTime"] = "2026-11-23T10:01:42Z";
  EXPECT_EQ(watchSummary(done), "job gpt Succeeded: step 120/2814, loss 0.5200, val loss 2.2500, perplexity 9.49, took 1m12s");
  done["status"]["progress"]["testAccuracy"] = 0.5;
  EXPECT_EQ(watchSummary(done),
            "job gpt Succeeded: step 120/2814, loss 0.5200, val loss 2.2500, perplexity 9.49, test accuracy 50.0%, "
            "took 1m12s");

  const std::string text = describeJob(gpt, Json::array(), kCreated + 300);
  EXPECT_NE(text.find("Test accuracy:  <none>\nVal loss:       2.2500 (perplexity 9.49)\n"
                      "Throughput:     81920 tokens/s, MFU 42.1%\nSpec:\n"),
            std::string::npos)
      << text;

  // Only the loss (a controller that sends no perplexity): the client computes exp(valLoss).
  Json lossOnly = gpt;
  lossOnly["status"]["progress"].erase("perplexity");
  lossOnly["status"]["progress"]["tokensPerSecond"] = nullptr;
  lossOnly["status"]["progress"]["mfu"] = nullptr;
  EXPECT_EQ(fields::perplexityText(lossOnly), "9.49");
  const std::string lossOnlyText = describeJob(lossOnly, Json::array(), kCreated + 300);
  EXPECT_NE(lossOnlyText.find("Val loss:       2.2500 (perplexity 9.49)\n"), std::string::npos) << lossOnlyText;
  EXPECT_EQ(lossOnlyText.find("Throughput:"), std::string::npos) << lossOnlyText;
}

// A job without them (every MLP and CNN, or an older controller that sends no such keys, or
// nulls) prints exactly as before.
TEST(LanguageModelFigures, NothingChangesForJobsWithoutThem) {
  Json nulls = runningJob();
  for (const char* k : {"valLoss", "perplexity", "tokensPerSecond", "mfu"}) nulls["status"]["progress"][k] = nullptr;
  for (const Json& job : {runningJob(), nulls}) {
    EXPECT_EQ(jobTable(Json::array({job}), kCreated, false).header,
              (std::vector<std::string>{"NAME", "PHASE", "WORKERS", "STEP", "PROGRESS", "LOSS", "ACCURACY", "AGE"}));
    EXPECT_EQ(jobTable(Json::array({job}), kCreated, true).header.back(), "ETA");
    EXPECT_EQ(progressLine(job, 10), progressLine(runningJob(), 10));
    EXPECT_EQ(progressLine(job, 10), "Running    [----------]  120/2814    4.3%  loss 0.5200  9000 samples/s  ETA 3m20s");
    EXPECT_EQ(describeJob(job, Json::array(), kCreated + 300), describeJob(runningJob(), Json::array(), kCreated + 300));
    EXPECT_EQ(describeJob(job, Json::array(), kCreated + 300).find("Val loss"), std::string::npos);
    Json done = job;
    done["status"]["phase"] = "Succeeded";
    EXPECT_EQ(watchSummary(done), "job fashion-mnist Succeeded: step 120/2814, loss 0.5200, test accuracy n/a");
  }
}

TEST(DescribeJob, SummarisesSpecThenConditionsWorkersAndEvents) {
  Json events = Json::parse(R"([{"time": "2026-11-23T10:00:00Z", "type": "Normal", "reason": "Created",
                                 "message": "job created"},
                                {"time": "2026-11-23T10:04:00Z", "type": "Warning", "reason": "SlowWorker",
                                 "message": "rank 1 is 20% slower"}])");
  const std::string text = describeJob(runningJob(), events, kCreated + 300);
  const char* expectedLines[] = {
      "Name:           fashion-mnist\n",
      "UID:            u-1\n",
      "Labels:         team=ml\n",
      "Created:        2026-11-23T10:00:00Z (5m ago)\n",
      "Phase:          Running\n",
      "Completed:      <none>\n",
      "Restarts:       0 (max 3)\n",
      "Progress:       step 120/2814 (4.3%), epoch 1/3, loss 0.5200, 9000 samples/s, ETA 3m20s\n",
      "Test accuracy:  <none>\n",
      "Spec:\n",
      "  Model:        mlp, hidden [256, 256], relu\n",
      "  Data:         fashion-mnist from /data/fm, batch 64 per worker\n",
      "  Workers:      2, device cpu, 1 thread each\n",
      "  Optimizer:    sgd, lr 0.01, momentum 0.9\n",
      "  Hook:         powerSGD (rank 2, start iter 10), fp16 wrapper\n",
      "  Training:     3 epochs\n",
      "  Checkpoint:   /ckpt, every 100 steps, keep 3\n",
      "Conditions:\n"
      "  TYPE      STATUS   REASON           AGE   MESSAGE\n"
      "  Created   True     JobCreated       5m    job accepted\n"
      "  Running   True     WorkersRunning   4m    2 workers\n",
      "Workers:\n"
      "  RANK   ID                 HOST        PID    STATE     STEP   HEARTBEAT\n"
      "  0      fashion-mnist-w0   127.0.0.1   1234   Running   120    2s ago\n",
      "Events:\n"
      "  TYPE      REASON       AGE   MESSAGE\n"
      "  Normal    Created      5m    job created\n"
      "  Warning   SlowWorker   1m    rank 1 is 20% slower\n",
  };
  size_t from = 0;
  for (const char* line : expectedLines) {
    const size_t at = text.find(line, from);
    ASSERT_NE(at, std::string::npos) << "missing, or out of order:\n" << line << "\nin:\n" << text;
    from = at;
  }
}

TEST(DescribeJob, HangsGetTheirFlightRecordSummary) {
  const Json records = Json::parse(R"([{"time": "2026-11-23T10:03:00Z", "reason": "CollectiveStuck", "generation": 1,
      "summary": "rank 1 never reached allreduce #812 (4.2 MB); ranks 0, 2, 3 waiting in it for 6.1 s", "ranks": []}])");
  const std::string text = describeJob(runningJob(), Json::array(), kCreated + 300, records);
  EXPECT_NE(text.find("Hangs:\n"
                      "  REASON            GENERATION   AGE   FLIGHT RECORDS\n"
                      "  CollectiveStuck   1            2m    rank 1 never reached allreduce #812 (4.2 MB); ranks 0, 2, 3 "
                      "waiting in it for 6.1 s\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(describeJob(runningJob(), Json::array(), kCreated + 300).find("Hangs:"), std::string::npos)
      << "no section without hangs";
}

TEST(DescribeJob, AnElasticJobShowsItsWorldSizeAndBounds) {
  Json job = runningJob();
  job["status"]["generation"] = 3;
  job["status"]["worldSize"] = 3;
  job["spec"]["workers"] = {{"count", 4}, {"min", 2}, {"max", 4}};
  const std::string text = describeJob(job, Json::array(), kCreated + 300);
  EXPECT_NE(text.find("Generation:     3 (world size 3)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  Workers:      4 (elastic 2-4)"), std::string::npos) << text;
}

TEST(DescribeJob, EmptyJobShowsNone) {
  const std::string text = describeJob(Json::object(), Json::array(), kCreated);
  EXPECT_NE(text.find("Name:           <none>\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  Checkpoint:   <none>\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Conditions:\n  <none>\nWorkers:\n  <none>\nEvents:\n  <none>\n"), std::string::npos) << text;
}

TEST(JsonToYaml, QuotesStringsThatWouldChangeTypeAndReadsBack) {
  Json doc = Json::parse(R"({"name": "job", "count": 3, "lr": 0.01, "on": true, "none": null,
                             "labels": {"version": "1.5", "flag": "yes", "empty": ""}, "list": [1, "2"]})");
  const std::string yaml = jsonToYaml(doc);
  YAML::Node n = YAML::Load(yaml);
  EXPECT_EQ(n["name"].as<std::string>(), "job");
  EXPECT_EQ(n["count"].as<int>(), 3);
  EXPECT_DOUBLE_EQ(n["lr"].as<double>(), 0.01);
  EXPECT_TRUE(n["on"].as<bool>());
  EXPECT_TRUE(n["none"].IsNull());
  EXPECT_NE(yaml.find("version: \"1.5\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("flag: \"yes\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("empty: \"\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("- \"2\""), std::string::npos) << yaml;
  EXPECT_EQ(yaml.back(), '\n');
}

}  // namespace
}  // namespace ddp::ddpctl
