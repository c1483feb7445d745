// The controller's two-phase checkpoint commit (Note [Two-phase checkpoint commit]) with real
// processes: a rank that cannot write its shard leaves that checkpoint uncommitted and the job
// goes on; a controller SIGKILLed between the shard reports and the commit leaves no MANIFEST,
// so the half-written checkpoint is never loaded (a recovery right after resumes from the
// previous committed one), and the catalog follows the disk.
// Faults are injected in the worker (DDP_TEST_CHECKPOINT_FAULT: a failed or a delayed shard
// write, worker_entry.cc) and by signals sent by PID to processes the test started (the
// controller process) or its controller's launcher started (a worker, by the pid in the job's
// record). Cleanup: the harnesses kill every worker and controller they started.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "common/checkpoint/checkpoint_catalog.h"
#include "common/checkpoint/checkpoint_store.h"
#include "controller/store/sqlite_job_store.h"
#include "tests/fault/fault_harness.h"
#include "tests/fault/rest_job_client.h"
#include "tests/support/controller_process.h"

namespace ddp {
namespace {

using nlohmann::json;
using test::FaultHarness;
using test::faultJobYaml;

std::string conditionsOf(const controller::JobRecord& r) {
  std::string out = "conditions:\n";
  for (const auto& c : r.conditions) {
    out += "  " + c.type + " " + (c.status ? "True " : "False ") + c.reason + ": " + c.message + "\n";
  }
  return out;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

TEST(CheckpointCommitTest, ARankThatCannotWriteItsShardLeavesItUncommittedAndTheJobGoesOn) {
  ::setenv("DDP_TEST_CHECKPOINT_FAULT", "1:40:fail", 1);
  struct Unset {
    ~Unset() { ::unsetenv("DDP_TEST_CHECKPOINT_FAULT"); }
  } unset;
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string dir = h.dir() + "/ckpt";
  std::string yaml = faultJobYaml("shardfail", dir, 120, 0);  // maxRestarts 0: a restart would fail it
  yaml.replace(yaml.find("keep: 2"), 7, "keep: 99");
  ASSERT_TRUE(h.submit(yaml).isOk());
  ASSERT_TRUE(h.waitPhase("shardfail", "Succeeded", 120)) << h.describeEvents("shardfail");
  auto abandoned = h.event("shardfail", "CheckpointAbandoned");
  ASSERT_NE(abandoned, nullptr) << h.describeEvents("shardfail");
  EXPECT_NE(abandoned->message.find("step 40"), std::string::npos) << abandoned->message;
  EXPECT_NE(abandoned->message.find("rank 1 could not write its shard: fault injection"), std::string::npos)
      << abandoned->message;
  runtime::CheckpointStore store(dir);
  EXPECT_FALSE(exists(store.manifestPath(40))) << "never committed";
  // Rank 0's shard of 40 was a dead partial: retention removed it with the next commit.
  EXPECT_FALSE(exists(store.stepDir(40)));
  for (int64_t step : {20, 60, 80, 100, 120}) {
    EXPECT_TRUE(store.verify(step).isOk()) << "step " << step << " committed";
  }
  // The catalog row of the last commit can land just after the job's phase (the commit report
  // and the workers' final heartbeats race): wait for it, bounded.
  std::vector<int64_t> steps;
  h.waitFor(10, [&] {
    auto cps = h.jobs().checkpoints("shardfail");
    steps.clear();
    if (cps.isOk()) {
      for (const auto& c : *cps) steps.push_back(c.step);
    }
    return !steps.empty() && steps.back() == 120;
  });
  EXPECT_EQ(steps, (std::vector<int64_t>{20, 60, 80, 100, 120})) << "the catalog holds the committed ones only";
  EXPECT_NE(h.event("shardfail", "CheckpointCommitted"), nullptr);
  EXPECT_EQ(h.record("shardfail").restarts, 0) << "the job went on without a restart";
  // Note [Checkpoints failing]: True after step 40's failure, False once a later one committed.
  const controller::JobRecord record = h.record("shardfail");
  const controller::JobCondition* failing = record.findCondition("CheckpointsFailing");
  ASSERT_NE(failing, nullptr);
  EXPECT_FALSE(failing->status);
  EXPECT_EQ(failing->reason, "CheckpointCommitted");
}

// The last checkpoint of the job fails (rank 1's shard of step 60, the final one): the job still
// ends Succeeded, but its status says its checkpoints are failing, with the error, and the
// ddp_job_checkpoints_failing gauge is 1 (issue: only events and a counter showed it).
TEST(CheckpointCommitTest, AJobWhoseLastCheckpointFailedSaysSoInItsStatus) {
  ::setenv("DDP_TEST_CHECKPOINT_FAULT", "1:60:fail", 1);
  struct Unset {
    ~Unset() { ::unsetenv("DDP_TEST_CHECKPOINT_FAULT"); }
  } unset;
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  ASSERT_TRUE(h.submit(faultJobYaml("lastfail", h.dir() + "/ckpt", 60, 0)).isOk());
  ASSERT_TRUE(h.waitPhase("lastfail", "Succeeded", 120)) << h.describeEvents("lastfail");
  ASSERT_TRUE(h.waitFor(10, [&] {
    const controller::JobRecord now = h.record("lastfail");
    const controller::JobCondition* c = now.findCondition("CheckpointsFailing");
    return c != nullptr && c->status;
  })) << h.describeEvents("lastfail") << conditionsOf(h.record("lastfail"));
  const controller::JobRecord r = h.record("lastfail");
  const controller::JobCondition* failing = r.findCondition("CheckpointsFailing");
  ASSERT_NE(failing, nullptr);
  EXPECT_EQ(failing->reason, "CheckpointAbandoned");
  EXPECT_NE(failing->message.find("rank 1 could not write its shard: fault injection"), std::string::npos)
      << failing->message;
  httplib::Client cli("127.0.0.1", h.port());
  auto m = cli.Get("/metrics", {{"Authorization", "Bearer " + h.controller().token()}});
  ASSERT_TRUE(m && m->status == 200);
  EXPECT_NE(m->body.find("ddp_job_checkpoints_failing{job=\"lastfail\"} 1"), std::string::npos)
      << m->body.substr(0, 3000);
}

// Rank 1's shard of step 40 is written 3 s late. Once rank 0's shard of step 40 is on disk (so
// it has reported), the controller is SIGKILLed and started again on the same state dir: the
// new one never saw rank 0's report, so it abandons step 40 and no MANIFEST is written even
// though both shards end up on disk. Rank 1 is then SIGKILLed: the recovery resumes from the
// last committed checkpoint, never from the half-written 40. (The job uses PowerSGD with error
// feedback, whose lost rank's residual only the checkpoint holds: no survivor heals it, Note
// [Healing from live peers], so the recovery reads a checkpoint.)
TEST(CheckpointCommitTest, AControllerKilledDuringACommitLeavesNoHalfCommittedCheckpoint) {
  FaultHarness scratch;  // only for its temporary directory, worker cleanup and waitFor
  const std::string state = scratch.dir() + "/state2";
  const std::string dir = scratch.dir() + "/ckpt";
  test::ControllerProcess first(state, {"DDP_TEST_CHECKPOINT_FAULT=1:40:delay:3"});
  const std::string url = first.start();
  ASSERT_FALSE(url.empty()) << "ddp-controller did not start";
  test::LauncherWorkersKiller killWorkers{state};
  test::RestJobClient api(url, state);
  const std::string hook =
      "  commHook:\n    type: powerSGD\n    powerSGD:\n      rank: 2\n      startIter: 10\n"
      "      minCompressionRate: 1\n";
  std::string yaml = faultJobYaml("ctlkill", dir, 200000, 3, hook);  // cancelled once recovered
  yaml.replace(yaml.find("keep: 2"), 7, "keep: 99");
  std::string answer;
  ASSERT_EQ(api.submit(yaml, &answer), 201) << answer;

  runtime::CheckpointStore store(dir);
  ASSERT_TRUE(scratch.waitFor(60, [&] { return exists(store.shardPath(40, 0)); })) << api.events("ctlkill");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // its report reaches the controller
  ASSERT_FALSE(exists(store.shardPath(40, 1))) << "rank 1's write is delayed by 3 s";
  first.kill(SIGKILL);

  test::ControllerProcess second(state);
  const std::string url2 = second.restartOn(url);
  ASSERT_EQ(url2, url);
  // Step 40 is decided: normally abandoned by the new controller (a CheckpointAbandoned event);
  // when rank 0's question found no job yet (the new controller was still restoring it) rank 0
  // gives the checkpoint up itself. Either way the next one commits and 40 never does.
  ASSERT_TRUE(scratch.waitFor(60, [&] {
    const std::string ev = api.events("ctlkill");
    return ev.find("CheckpointAbandoned: checkpoint at step 40") != std::string::npos ||
           ev.find("CheckpointCommitted: checkpoint at step 60") != std::string::npos;
  })) << api.events("ctlkill");
  EXPECT_FALSE(exists(store.manifestPath(40))) << "no MANIFEST, though rank 1's delayed shard is written by now";

  // A recovery now must resume from step 20, not the half-written 40.
  int64_t pid1 = 0;
  ASSERT_TRUE(scratch.waitFor(20, [&] { return (pid1 = api.pidOfRank("ctlkill", 1)) > 0; }))
      << api.job("ctlkill").dump(2);
  ASSERT_EQ(::kill(static_cast<pid_t>(pid1), SIGKILL), 0);
  ASSERT_TRUE(scratch.waitFor(60, [&] { return api.events("ctlkill").find("Recovered:") != std::string::npos; }))
      << api.events("ctlkill");
  // The resume point: a committed checkpoint (20, or one after 40 that committed before the
  // kill), never the half-written 40.
  const std::string events = api.events("ctlkill");
  const size_t at = events.find("resumed at step ", events.find("Recovered:"));
  ASSERT_NE(at, std::string::npos) << events;
  const int64_t resumed = std::stoll(events.substr(at + std::string("resumed at step ").size()));
  EXPECT_TRUE(resumed == 20 || resumed > 40) << events;
  EXPECT_EQ(resumed % 20, 0) << events;
  EXPECT_TRUE(store.verify(resumed).isOk());
  // Training goes on from there: a checkpoint of the new generation commits; then the job is
  // cancelled (its workers checkpoint and stop).
  ASSERT_TRUE(scratch.waitFor(60, [&] {
    const std::string ev = api.events("ctlkill");
    return ev.find("CheckpointCommitted", ev.find("Recovered:")) != std::string::npos;
  })) << api.events("ctlkill");
  ASSERT_EQ(api.cancel("ctlkill"), 200);
  ASSERT_TRUE(scratch.waitFor(60, [&] { return api.phase("ctlkill") == "Cancelled"; }))
      << api.phase("ctlkill") << "\n" << api.events("ctlkill");
  std::ifstream log(state + "/jobs/ctlkill/logs/ctlkill-w0.log");
  const std::string rank0((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(rank0.find("resumed from " + store.stepDir(resumed)), std::string::npos) << rank0.substr(0, 4000);
  EXPECT_EQ(rank0.find("resumed from " + store.stepDir(40)), std::string::npos);
  auto latest = store.findLatestComplete();
  ASSERT_TRUE(latest.isOk() && latest->manifest) << "the stop checkpoint is committed";
  EXPECT_GT(latest->manifest->step, resumed);
  second.kill(SIGTERM);
}

// Rank 0's shard of step 40 is written 3 s late; rank 1's is written and reported at once, to
// the first controller, which is then SIGKILLed; a new one starts on the same state dir. It
// never saw rank 1's report of 40, which will not come again: once rank 1 reports step 60, step
// 40 is abandoned with no verdict (before: the new controller waited for it up to
// collectiveSeconds while rank 0 blocked before its next checkpoint, and the hang detector
// blamed rank 0), and training goes on without a restart.
TEST(CheckpointCommitTest, AControllerRestartBetweenTwoRanksReportsBlamesNoRank) {
  FaultHarness scratch;  // only for its temporary directory, worker cleanup and waitFor
  const std::string state = scratch.dir() + "/state2";
  const std::string dir = scratch.dir() + "/ckpt";
  test::ControllerProcess first(state, {"DDP_TEST_CHECKPOINT_FAULT=0:40:delay:3"});
  const std::string url = first.start();
  ASSERT_FALSE(url.empty()) << "ddp-controller did not start";
  test::LauncherWorkersKiller killWorkers{state};
  test::RestJobClient api(url, state);
  std::string answer;
  ASSERT_EQ(api.submit(faultJobYaml("lostreport", dir, 200000, 3), &answer), 201) << answer;
  runtime::CheckpointStore store(dir);
  ASSERT_TRUE(scratch.waitFor(60, [&] { return exists(store.shardPath(40, 1)); })) << api.events("lostreport");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its report reaches the controller
  ASSERT_FALSE(exists(store.shardPath(40, 0))) << "rank 0's write is delayed by 3 s";
  first.kill(SIGKILL);

  test::ControllerProcess second(state);
  const std::string url2 = second.restartOn(url);
  ASSERT_EQ(url2, url);
  ASSERT_TRUE(scratch.waitFor(60, [&] {
    const std::string ev = api.events("lostreport");
    return ev.find("CheckpointCommitted: checkpoint at step 80") != std::string::npos;
  })) << api.events("lostreport");
  const std::string events = api.events("lostreport");
  EXPECT_NE(events.find("rank 1 reported step 60 but never step 40"), std::string::npos) << events;
  EXPECT_EQ(events.find("CollectiveStuck"), std::string::npos) << events;
  const nlohmann::json job = api.job("lostreport");
  EXPECT_EQ(job["status"]["restarts"], 0) << job.dump(2);
  EXPECT_EQ(job["status"]["phase"], "Running") << job.dump(2);
  EXPECT_FALSE(exists(store.manifestPath(40)));
  ASSERT_EQ(api.cancel("lostreport"), 200);
  ASSERT_TRUE(scratch.waitFor(60, [&] { return api.phase("lostreport") == "Cancelled"; })) << api.events("lostreport");
  second.kill(SIGTERM);
}

// Note [Catalog follows the disk]: a controller SIGKILLed in the middle of a commit left a catalog
// that listed a deleted step and missed a committed one. Here that state is made by editing the
// stopped controller's job table (a faked crash point: which SQLite write a SIGKILL interrupts
// cannot be chosen), then a new controller starts on it: its catalog is the directory's
// committed checkpoints again, before any new commit.
TEST(CheckpointCommitTest, ARestartedControllerSetsTheCatalogToTheDirectory) {
  FaultHarness scratch;
  const std::string state = scratch.dir() + "/state2";
  const std::string dir = scratch.dir() + "/ckpt";
  test::LauncherWorkersKiller killWorkers{state};
  std::string url;
  {
    test::ControllerProcess first(state);
    url = first.start();
    ASSERT_FALSE(url.empty());
    test::RestJobClient api(url, state);
    std::string answer;
    ASSERT_EQ(api.submit(faultJobYaml("catalog", dir, 100, 0), &answer), 201) << answer;
    ASSERT_TRUE(scratch.waitFor(60, [&] { return api.phase("catalog") == "Succeeded"; })) << api.events("catalog");
    first.kill(SIGKILL);
  }
  auto disk = runtime::listCommitted(runtime::CheckpointStore(dir), "catalog");
  ASSERT_TRUE(disk.isOk() && disk->size() == 2) << "keep: 2";
  {
    auto db = controller::SqliteJobStore::open(state + "/jobs.db");
    ASSERT_TRUE(db.isOk()) << db.status();
    ASSERT_TRUE((*db)->addCheckpoint("catalog", {20, 1, 5, 2, dir + "/gone"}).isOk());  // deleted since
    ASSERT_TRUE((*db)->retainCheckpoints("catalog", {20, (*disk)[0].step}).isOk());     // the last one lost
  }
  test::ControllerProcess second(state);
  const std::string url2 = second.start();
  ASSERT_FALSE(url2.empty());
  test::RestJobClient api(url2, state);
  auto r = api.http().Get("/v1/jobs/catalog/checkpoints", api.auth());
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  std::vector<int64_t> steps;
  const nlohmann::json listed = nlohmann::json::parse(r->body);
  for (const auto& c : listed["checkpoints"]) steps.push_back(c["step"].get<int64_t>());
  EXPECT_EQ(steps, (std::vector<int64_t>{(*disk)[0].step, (*disk)[1].step})) << r->body;
  second.kill(SIGTERM);
}

}  // namespace
}  // namespace ddp
