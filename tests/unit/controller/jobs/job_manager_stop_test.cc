// The JobManager's stop and recovery paths driven through its public methods, with an injected
// clock and a fake launcher: the test plays the workers (register, heartbeats) and the launcher
// (the exits it reports), so every decision is checked without a process or a sleep. Note
// [Stopping an unresponsive worker] (job_decision.h), Note [Recovery] (job_manager.h).
// Time: the FakeClock moves only when a test advances it; the JobManager's ticker thread runs
// every 2 ms of real time and acts on the fake time it reads, so a test advances the clock, then
// waits (bounded, polling) for the effect.
// Thread model: the test's thread, the JobManager's ticker; FakeLauncher's calls are guarded by
// its mutex.
#include "controller/jobs/job_manager.h"
#include "controller/metrics/controller_metrics.h"
#include "tests/support/prometheus_text.h"

#include <gtest/gtest.h>

#include <map>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include "common/jobspec/job_spec.h"
#include "controller/store/sqlite_job_store.h"
#include "tests/unit/controller/fake_launcher.h"
#include "tests/unit/controller/job_store_test_util.h"

namespace ddp::controller {
namespace {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

class JobManagerStopTest : public ::testing::Test {
 protected:
  static constexpr const char* kJob = "j";

  void SetUp() override {
    auto store = SqliteJobStore::open(dir_.path() + "/jobs.db");
    ASSERT_TRUE(store.isOk()) << store.status();
    store_ = std::move(*store);
    JobManagerOptions o;
    o.tick = std::chrono::milliseconds(2);
    o.stopGrace = std::chrono::seconds(30);
    // Not the defaults (10 s, 5 s): GracesComeFromTheTimingsNotLiterals tells them apart.
    o.timings.killGrace = std::chrono::seconds(7);
    o.timings.idleStopGrace = std::chrono::seconds(3);
    // Not the default (1 s): TheRestartBackoffComesFromTheTimings tells it apart.
    o.timings.restartBackoffBase = std::chrono::seconds(4);
    o.persistEvery = std::chrono::milliseconds(10);
    o.metrics = &metrics_;
    jobs_ = std::make_unique<JobManager>(o, *store_, launcher_, clock_);
    ASSERT_TRUE(jobs_->start().isOk());
  }
  void TearDown() override {
    if (jobs_) jobs_->stop();
  }

  // Two workers (or `workers`), heartbeat 1 s x 3 misses, hang 5 s (and `timeouts`); up to 3
  // restarts.
  void submit(const std::string& extra = "", const std::string& workers = "count: 2", const std::string& timeouts = "") {
    const std::string yaml =
        std::string("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: ") + kJob +
        "\nspec:\n  workers: {" + workers + "}\n  model: {type: mlp, hidden: [8]}\n"
        "  data: {dataset: synthetic, batchSize: 8}\n  steps: 1000\n  maxRestarts: 3\n"
        "  timeouts: {heartbeatSeconds: 1, heartbeatMisses: 3, hangSeconds: 5, collectiveSeconds: 30" + timeouts + "}\n" +
        extra;
    auto spec = parseJobSpec(yaml);
    ASSERT_TRUE(spec.isOk()) << spec.status();
    ASSERT_TRUE(jobs_->submit(*spec).isOk());
  }
  Result<int64_t> join(const std::string& id, int64_t pid, int64_t leftGeneration = 0, const std::string& why = "",
                       int64_t lastStep = -1) {
    RegisterRequest r;
    r.lastStep = lastStep;
    r.workerId = id;
    r.host = "127.0.0.1";
    r.pid = pid;
    r.leftGeneration = leftGeneration;
    r.reason = why;
    // As a worker does: the process keeps the incarnation its first registration got and sends
    // it again (Note [Worker incarnations]); a new pid is a new process.
    auto held = incarnations_.find(id);
    if (held != incarnations_.end() && held->second.first == pid) r.incarnation = held->second.second;
    Fenced fenced;
    std::string incarnation;
    auto g = jobs_->registerWorker(kJob, r, &fenced, &incarnation);
    if (g.isOk()) incarnations_[id] = {pid, incarnation};
    return g;
  }
  std::map<std::string, std::pair<int64_t, std::string>> incarnations_;  // worker id -> (pid, nonce)
  // Both workers registered: generation 1 is Running.
  void running() {
    submit();
    ASSERT_TRUE(join("j-w0", 100).isOk());
    ASSERT_TRUE(join("j-w1", 101).isOk());
    advance(0.3);
    ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kRunning; })) << jobPhaseName(record().phase);
    ASSERT_TRUE(beat("j-w0", 0).isOk());
    ASSERT_TRUE(beat("j-w1", 1).isOk());
  }
  Result<Command> beat(const std::string& id, int rank, int64_t g = 1, const std::string& state = "Running",
                       const std::map<std::string, double>& ext = {}) {
    Heartbeat hb;
    hb.workerId = id;
    hb.rank = rank;
    if (!protocol::parseWorkerState(state, &hb.state)) return invalidArgument("test: no worker state '" + state + "'");
    hb.step = 10;
    hb.totalSteps = 1000;
    hb.ext = ext;
    Fenced fenced;
    return jobs_->heartbeat(kJob, g, hb, &fenced);
  }
  // `killed`: SIGKILLed by the launcher; else exited with `code`.
  void exited(const std::string& id, int64_t pid, bool killed, int code = 0) {
    ended(id, pid, killed, killed ? SIGKILL : code, killed);
  }
  // Ended by `signal` of its own (a crash), not by the launcher.
  void crashed(const std::string& id, int64_t pid, int signal) { ended(id, pid, true, signal, false); }
  void ended(const std::string& id, int64_t pid, bool signaled, int code, bool byLauncher) {
    WorkerExit e;
    e.jobName = kJob;
    e.workerId = id;
    e.pid = pid;
    e.signaled = signaled;
    e.code = code;
    e.killedByLauncher = byLauncher;
    jobs_->onWorkerExit(e);
  }
  // Rank 0 keeps beating for 4 s while rank 1 is silent: the Unresponsive verdict (window 3 s).
  void untilRank1IsUnresponsive() {
    for (int i = 0; i < 4; ++i) {
      advance(1);
      ASSERT_TRUE(beat("j-w0", 0).isOk());
    }
    ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kRestarting; })) << allEvents();
  }
  void advance(double s) {
    clock_.advance(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)));
  }
  // Polls `pred` (real time, bounded): the ticker acts on the fake time within milliseconds.
  bool waitFor(const std::function<bool()>& pred) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return pred();
  }
  JobRecord record() {
    auto r = jobs_->get(kJob);
    return r.isOk() ? *r : JobRecord{};
  }
  // The events with `reason`, once there are at least `atLeast` (the ticker may be writing them:
  // bounded wait).
  std::vector<JobEvent> events(const std::string& reason, size_t atLeast = 0) {
    std::vector<JobEvent> out;
    waitFor([&] {
      out = eventsNow(reason);
      return out.size() >= atLeast;
    });
    return out;
  }
  std::vector<JobEvent> eventsNow(const std::string& reason) {
    std::vector<JobEvent> out;
    auto all = jobs_->events(kJob);
    if (!all.isOk()) return out;
    for (const auto& e : *all) {
      if (e.reason == reason) out.push_back(e);
    }
    return out;
  }
  std::string allEvents() {
    std::string out;
    auto all = jobs_->events(kJob);
    if (all.isOk()) {
      for (const auto& e : *all) out += "  " + e.reason + ": " + e.message + "\n";
    }
    return out;
  }
  const JobCondition* condition(const JobRecord& r, const std::string& type) {
    for (const auto& c : r.conditions) {
      if (c.type == type) return &c;
    }
    return nullptr;
  }

  testing::TempDir dir_{"job_manager_stop_test"};
  FakeClock clock_;
  ControllerMetrics metrics_;  // declared before the JobManager that reports to it
  FakeLauncher launcher_;
  std::unique_ptr<SqliteJobStore> store_;
  std::unique_ptr<JobManager> jobs_;
};

// Note [Stopping an unresponsive worker]: rank 1 stops heartbeating (SIGSTOPped) just before a
// cancel; once it is silent for longer than the heartbeat window it is SIGKILLed, long before
// the 30 s stop grace, while rank 0 (heartbeating) only gets the SIGTERM of the cancel.
TEST_F(JobManagerStopTest, ACancelKillsAWorkerSilentPastTheHeartbeatWindowAtOnce) {
  ASSERT_NO_FATAL_FAILURE(running());
  advance(0.5);
  ASSERT_TRUE(beat("j-w0", 0).isOk());  // rank 1 is silent from here on
  ASSERT_TRUE(jobs_->cancel(kJob).isOk());
  EXPECT_TRUE(contains(launcher_.signalsTo("j-w1"), SIGTERM)) << "a cancel signals every worker";
  for (int i = 0; i < 4; ++i) {  // rank 0 beats every second and hears `stop`
    advance(1);
    auto c = beat("j-w0", 0);
    ASSERT_TRUE(c.isOk());
    EXPECT_EQ(c->type, CommandType::kStop);
  }
  // 4.5 s since rank 1's last heartbeat (window 3 s): killed, without the 30 s grace.
  ASSERT_TRUE(waitFor([&] { return contains(launcher_.signalsTo("j-w1"), SIGKILL); })) << allEvents();
  EXPECT_FALSE(contains(launcher_.signalsTo("j-w0"), SIGKILL)) << "the heartbeating rank keeps its grace";
  EXPECT_EQ(launcher_.stops(), 0) << "the grace has not run out";
  auto killed = events("UnresponsiveKilled", 1);
  ASSERT_EQ(killed.size(), 1u) << allEvents();
  EXPECT_NE(killed[0].message.find("worker rank 1 (j-w1) sent no heartbeat for"), std::string::npos)
      << killed[0].message;
  EXPECT_TRUE(eventsNow("Unresponsive").empty()) << "no verdict (and no restart) once a cancel was asked for";
  exited("j-w1", 101, /*killed=*/true);
  ASSERT_TRUE(beat("j-w0", 0, 1, "Stopped").isOk());
  exited("j-w0", 100, /*killed=*/false);
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kCancelled; }))
      << jobPhaseName(record().phase) << "\n" << allEvents();
  EXPECT_EQ(record().restarts, 0);
  EXPECT_EQ(launcher_.signalsTo("j-w1").size(), 2u) << "SIGTERM, then one SIGKILL";
}

// A verdict's Restarting condition and event name the reason and the rank (Note [Recovery]).
TEST_F(JobManagerStopTest, UnresponsiveVerdictSetsRestartingWithTheReasonAndTheRank) {
  ASSERT_NO_FATAL_FAILURE(running());
  ASSERT_NO_FATAL_FAILURE(untilRank1IsUnresponsive());
  const JobRecord r = record();
  EXPECT_EQ(r.restarts, 1);
  const JobCondition* c = condition(r, kConditionRestarting);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->status);
  EXPECT_EQ(c->reason, "Unresponsive");
  EXPECT_NE(c->message.find("restart 1 of 3: "), std::string::npos) << c->message;
  EXPECT_NE(c->message.find("worker rank 1 (j-w1) sent no heartbeat"), std::string::npos) << c->message;
  const JobCondition* run = condition(r, kConditionRunning);
  ASSERT_NE(run, nullptr);
  EXPECT_FALSE(run->status);
  EXPECT_EQ(run->reason, "Unresponsive");
  auto restarting = events("Restarting", 1);
  ASSERT_EQ(restarting.size(), 1u) << allEvents();
  EXPECT_NE(restarting[0].message.find("restart 1 of 3 after Unresponsive"), std::string::npos) << restarting[0].message;
  EXPECT_NE(restarting[0].message.find("replacing j-w1"), std::string::npos) << restarting[0].message;
}

// A cancel while a culprit waits for its replacement (here: for the survivor's flight record):
// no replacement starts, the stopped culprit is killed at once, and the job ends Cancelled
// (it used to wait for a replacement that never came).
TEST_F(JobManagerStopTest, ACancelDuringARestartEndsCancelledWithoutAReplacement) {
  ASSERT_NO_FATAL_FAILURE(running());
  ASSERT_NO_FATAL_FAILURE(untilRank1IsUnresponsive());
  ASSERT_TRUE(launcher_.replaced().empty()) << "the survivor's flight record is awaited first";
  ASSERT_TRUE(jobs_->cancel(kJob).isOk());
  ASSERT_TRUE(waitFor([&] { return contains(launcher_.signalsTo("j-w1"), SIGKILL); })) << allEvents();
  exited("j-w1", 101, /*killed=*/true);
  advance(3);  // past the flight-record wait: still no replacement once cancelled
  exited("j-w0", 100, /*killed=*/false);
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kCancelled; }))
      << jobPhaseName(record().phase) << "\n" << allEvents();
  EXPECT_TRUE(launcher_.replaced().empty());
}

// Note [Recovery figures]: the survivor of an Exited verdict aborts on its own before any
// heartbeat tells it to; its abort counts once (also when a heartbeat then says `abort`), and the
// Recovered event takes where the generation ended from the step it reports when it rejoins (57
// here, while its last heartbeat said 10), not from the stale heartbeats.
TEST_F(JobManagerStopTest, AbortsCountOncePerWorkerAndStepsRedoneComeFromTheRejoin) {
  ASSERT_NO_FATAL_FAILURE(running());
  exited("j-w1", 101, /*killed=*/false, /*code=*/1);
  ASSERT_TRUE(waitFor([&] { return launcher_.replaced().size() == 1; })) << allEvents();
  ASSERT_TRUE(join("j-w0", 100, 1, "peer gone", /*lastStep=*/57).isOk());  // the survivor, on its own
  auto told = beat("j-w0", 0, 1);  // a late heartbeat of generation 1 is answered abort
  ASSERT_TRUE(join("j-w1", 201).isOk());  // the replacement
  ASSERT_TRUE(waitFor([&] { return record().generation == 2; })) << allEvents();
  advance(0.3);
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kRunning; })) << allEvents();
  for (const auto& [id, rank] : {std::pair<std::string, int>{"j-w0", 0}, {"j-w1", 1}}) {
    Heartbeat hb;
    hb.workerId = id;
    hb.rank = rank;
    hb.step = 55;  // resumed at 50 (a checkpoint or a survivor's state), 5 steps done since
    hb.totalSteps = 1000;
    hb.counters.steps = 5;
    Fenced fenced;
    ASSERT_TRUE(jobs_->heartbeat(kJob, 2, hb, &fenced).isOk());
  }
  ASSERT_TRUE(waitFor([&] { return allEvents().find("Recovered:") != std::string::npos; })) << allEvents();
  const std::string events = allEvents();
  EXPECT_NE(events.find("the last generation ended at step 57, resumed at step 50 (steps redone: 7)"),
            std::string::npos) << events;
  const test::PromText t = test::PromText::parse(metrics_.scrape({}));
  EXPECT_EQ(t.value("ddp_aborts_total", {{"job", "j"}}), 1) << "one survivor, one abort"
                                                           << (told.isOk() ? "" : told.status().toString());
}

// The same after an Exited verdict whose replacement waits out a restart backoff (restart 2:
// restartBackoffBase): the dead culprit's slot counts as stopped, not as a process still to come.
TEST_F(JobManagerStopTest, ACancelDuringARestartBackoffEndsCancelled) {
  ASSERT_NO_FATAL_FAILURE(running());
  exited("j-w1", 101, /*killed=*/false, /*code=*/1);  // restart 1: replaced at once
  ASSERT_TRUE(waitFor([&] { return launcher_.replaced().size() == 1; })) << allEvents();
  ASSERT_TRUE(join("j-w1", 201).isOk());  // the replacement
  ASSERT_TRUE(join("j-w0", 100, 1, "peer gone").isOk());  // the survivor rejoins
  ASSERT_TRUE(waitFor([&] { return record().generation == 2; })) << allEvents();
  advance(0.3);
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kRunning; })) << allEvents();
  exited("j-w1", 201, /*killed=*/false, /*code=*/1);  // restart 2: after 4 s
  ASSERT_TRUE(waitFor([&] { return record().restarts == 2; })) << allEvents();
  ASSERT_TRUE(jobs_->cancel(kJob).isOk());
  advance(5);
  exited("j-w0", 100, /*killed=*/false);
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kCancelled; }))
      << jobPhaseName(record().phase) << "\n" << allEvents();
  EXPECT_EQ(launcher_.replaced().size(), 1u) << "the second replacement never started";
}

// Note [Recovery]: the second restart's replacement waits restartBackoffBase (4 s here, 1 s by
// default), the JobManagerOptions' timing, not a literal.
TEST_F(JobManagerStopTest, TheRestartBackoffComesFromTheTimings) {
  ASSERT_NO_FATAL_FAILURE(running());
  exited("j-w1", 101, /*killed=*/false, /*code=*/1);  // restart 1: replaced at once
  ASSERT_TRUE(waitFor([&] { return launcher_.replaced().size() == 1; })) << allEvents();
  ASSERT_TRUE(join("j-w1", 201).isOk());
  ASSERT_TRUE(join("j-w0", 100, 1, "peer gone").isOk());
  ASSERT_TRUE(waitFor([&] { return record().generation == 2; })) << allEvents();
  advance(0.3);
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kRunning; })) << allEvents();
  exited("j-w1", 201, /*killed=*/false, /*code=*/1);  // restart 2
  ASSERT_TRUE(waitFor([&] { return record().restarts == 2; })) << allEvents();
  advance(3.5);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // ticks at 3.5 s
  EXPECT_EQ(launcher_.replaced().size(), 1u) << "within the 4 s backoff";
  advance(1);
  EXPECT_TRUE(waitFor([&] { return launcher_.replaced().size() == 2; })) << "after it\n" << allEvents();
}

// A rank whose collective passed its own deadline (collectiveSeconds) aborts its communicator
// and registers again at once, naming the generation it left: the controller records it and,
// with no exit to explain it within 1 s, gives the CollectiveFailed verdict; no worker is
// replaced and the other rank is told to abort and rejoin.
TEST_F(JobManagerStopTest, ARankThatLeftAfterItsCollectiveDeadlineGivesCollectiveFailed) {
  ASSERT_NO_FATAL_FAILURE(running());
  auto next = join("j-w0", 100, 1, "allreduce #12 did not complete within collectiveSeconds (30 s)");
  ASSERT_TRUE(next.isOk()) << next.status();
  EXPECT_EQ(*next, 2);
  auto aborted = events("CommunicatorAborted", 1);
  ASSERT_EQ(aborted.size(), 1u) << allEvents();
  EXPECT_NE(aborted[0].message.find("worker rank 0 (j-w0) left generation 1: allreduce #12"), std::string::npos)
      << aborted[0].message;
  advance(0.5);
  ASSERT_TRUE(beat("j-w1", 1).isOk());
  advance(0.7);  // 1.2 s after it left, no exit explains it
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kRestarting; })) << allEvents();
  const JobRecord r = record();
  const JobCondition* c = condition(r, kConditionRestarting);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "CollectiveFailed");
  EXPECT_NE(c->message.find("worker rank 0 (j-w0) aborted its communicator: allreduce #12"), std::string::npos)
      << c->message;
  auto cmd = beat("j-w1", 1);
  ASSERT_TRUE(cmd.isOk()) << cmd.status();
  EXPECT_EQ(cmd->type, CommandType::kAbort) << "the survivor aborts and rejoins";
  ASSERT_TRUE(join("j-w1", 101, 1, "aborted by the controller").isOk());
  advance(0.3);
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kRunning && record().generation == 2; }))
      << allEvents();
  EXPECT_TRUE(launcher_.replaced().empty()) << "nobody is replaced for a failed collective";
  EXPECT_EQ(record().restarts, 1);
}

// ext.abortUnreliable in a heartbeat (the Gloo abort self-test failed on that worker): one
// AbortUnreliable event per worker, however many heartbeats say so.
TEST_F(JobManagerStopTest, AbortUnreliableInAHeartbeatIsOneEvent) {
  ASSERT_NO_FATAL_FAILURE(running());
  ASSERT_TRUE(beat("j-w1", 1, 1, "Running", {{"abortUnreliable", 0}}).isOk());
  EXPECT_TRUE(eventsNow("AbortUnreliable").empty()) << "0 means reliable";
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(beat("j-w1", 1, 1, "Running", {{"abortUnreliable", 1}}).isOk());
  auto e = events("AbortUnreliable", 1);
  ASSERT_EQ(e.size(), 1u) << allEvents();
  EXPECT_EQ(e[0].type, kEventWarning);
  EXPECT_NE(e[0].message.find("worker j-w1: its communicator abort did not release"), std::string::npos)
      << e[0].message;
}

// Note [Standby replicas] (kubernetes_runtime.h): a job manager that has not started (a replica
// that does not lead) answers every change with Unavailable and touches no worker; reads come
// from the table; once started it takes the stored job over.
TEST_F(JobManagerStopTest, BeforeStartEveryChangeIsUnavailableAndNoWorkerIsTouched) {
  submit();
  jobs_->stop();
  JobManagerOptions o;
  o.tick = std::chrono::milliseconds(2);
  JobManager standby(o, *store_, launcher_, clock_);
  EXPECT_EQ(standby.changesAllowed().code(), StatusCode::kUnavailable);  // /readyz: 503
  auto spec = jobs_->spec(kJob);
  ASSERT_TRUE(spec.isOk());
  JobSpec other = *spec;
  other.name = "other";
  EXPECT_EQ(standby.submit(other).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(standby.cancel(kJob).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(standby.scale(kJob, 1).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(standby.requestCheckpoint(kJob).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(standby.fail(kJob, "X", "y").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(standby.replaceWorkers(kJob, {"j-w0"}).code(), StatusCode::kUnavailable);
  const Status removed = standby.remove(kJob, Deadline::after(std::chrono::seconds(1)));
  EXPECT_EQ(removed.code(), StatusCode::kUnavailable);
  EXPECT_NE(removed.message().find("standby"), std::string::npos) << removed;
  auto rec = standby.get(kJob);  // from the table
  ASSERT_TRUE(rec.isOk());
  EXPECT_EQ(rec->phase, JobPhase::kPending);
  EXPECT_FALSE(standby.get("other").isOk());
  EXPECT_EQ(launcher_.stops(), 0);
  EXPECT_TRUE(launcher_.replaced().empty());
  ASSERT_TRUE(standby.start().isOk());  // it leads now
  EXPECT_TRUE(standby.changesAllowed().isOk());
  EXPECT_TRUE(standby.cancel(kJob).isOk());
  standby.stop();
}

// Note [Recovery]: after a verdict the next round waits for a survivor still tearing down (a
// checkpoint write finishing, its communicator's threads joining: it sends no heartbeat
// meanwhile) for the last call and hangSeconds (survivorWait), not only the heartbeat window: an
// elastic job (min 2) loses j-w3; j-w0 and j-w1 are back at once, j-w2 only 4.5 s after the
// verdict, past lastCall 1 s + the 3 s heartbeat window but within lastCall + hangSeconds 5 s.
TEST_F(JobManagerStopTest, ASurvivorSlowToTearDownIsWaitedForUpToTheLastCallAndHangSeconds) {
  submit("", "count: 4, min: 2, max: 4", ", lastCallSeconds: 1");
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(join("j-w" + std::to_string(i), 100 + i).isOk());
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kRunning; })) << jobPhaseName(record().phase);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(beat("j-w" + std::to_string(i), i).isOk());

  crashed("j-w3", 103, SIGSEGV);
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kRestarting; })) << allEvents();
  for (int i = 0; i < 3; ++i) {
    auto c = beat("j-w" + std::to_string(i), i);
    ASSERT_TRUE(c.isOk()) << c.status();
    EXPECT_EQ(c->type, CommandType::kAbort);
  }
  ASSERT_TRUE(join("j-w0", 100, 1, "aborted").isOk());
  ASSERT_TRUE(join("j-w1", 101, 1, "aborted").isOk());
  for (int i = 0; i < 9; ++i) {  // 4.5 s: the round stays open for j-w2
    advance(0.5);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the ticker sees each time
  }
  EXPECT_EQ(eventsNow("RendezvousClosed").size(), 1u) << "closed without the slow survivor\n" << allEvents();
  ASSERT_TRUE(join("j-w2", 102, 1, "aborted").isOk());
  advance(0.1);
  auto closed = events("RendezvousClosed", 2);
  ASSERT_EQ(closed.size(), 2u) << allEvents();
  EXPECT_EQ(closed[1].message, "generation 2 with 3 worker(s)");
  EXPECT_EQ(record().restarts, 1);
}

// The launcher's graces are the JobManagerOptions' timings: a cancel before the rendezvous closed
// gives min(stopGrace, idleStopGrace) (3 s here), a job the ticker stops gets killGrace (7 s).
TEST_F(JobManagerStopTest, GracesComeFromTheTimingsNotLiterals) {
  submit();
  ASSERT_TRUE(jobs_->cancel(kJob).isOk());
  ASSERT_TRUE(waitFor([&] { return launcher_.stops() >= 1; }));
  EXPECT_EQ(launcher_.stopGraces().front(), std::chrono::seconds(3));

  auto spec = parseJobSpec(
      "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: k}\nspec:\n  workers: {count: 1}\n"
      "  model: {type: mlp, hidden: [8]}\n  data: {dataset: synthetic, batchSize: 8}\n  steps: 10\n");
  ASSERT_TRUE(spec.isOk()) << spec.status();
  ASSERT_TRUE(jobs_->submit(*spec).isOk());
  const size_t before = launcher_.stopGraces().size();
  ASSERT_TRUE(jobs_->fail("k", "Test", "failed by the test").isOk());
  ASSERT_TRUE(waitFor([&] { return launcher_.stopGraces().size() > before; }));
  EXPECT_EQ(launcher_.stopGraces().back(), std::chrono::seconds(7));
}

TEST(JobTimingsTest, ValidateNamesTheField) {
  EXPECT_TRUE(JobTimings{}.validate().isOk());
  JobTimings t;
  t.killGrace = Duration::zero();
  Status st = t.validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("killGrace"), std::string::npos) << st.message();
  t = JobTimings{};
  t.flightRecordWaitMin = std::chrono::seconds(6);
  st = t.validate();
  EXPECT_NE(st.message().find("flightRecordWaitMin"), std::string::npos) << st.message();
  t = JobTimings{};
  t.restartBackoffBase = std::chrono::seconds(31);
  st = t.validate();
  EXPECT_NE(st.message().find("restartBackoffBase"), std::string::npos) << st.message();
  t = JobTimings{};
  t.deletePollEvery = Duration::zero();
  EXPECT_NE(t.validate().message().find("deletePollEvery"), std::string::npos);
}

// Note [Suspended jobs]: a suspension stops the workers as a cancel does (they hear `stop`:
// checkpoint and stop), ends Suspended (not terminal, spec.suspend stored), and a resume starts
// a fresh rendezvous whose generation follows the last, so a worker of before is fenced.
TEST_F(JobManagerStopTest, ASuspendedJobStopsItsWorkersAndResumesWithNewOnes) {
  ASSERT_NO_FATAL_FAILURE(running());
  auto suspended = jobs_->suspend(kJob);
  ASSERT_TRUE(suspended.isOk()) << suspended.status();
  EXPECT_TRUE(jobs_->spec(kJob)->suspend) << "stored before the answer";
  EXPECT_TRUE(contains(launcher_.signalsTo("j-w0"), SIGTERM));
  auto c = beat("j-w0", 0);
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c->type, CommandType::kStop);
  EXPECT_EQ(jobs_->resume(kJob).status().code(), StatusCode::kFailedPrecondition) << "still stopping";
  ASSERT_TRUE(beat("j-w0", 0, 1, "Stopped").isOk());
  ASSERT_TRUE(beat("j-w1", 1, 1, "Stopped").isOk());
  exited("j-w0", 100, false);
  exited("j-w1", 101, false);
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kSuspended; })) << allEvents();
  const JobRecord atSuspend = record();  // outlives `cond`, which points into it
  const JobCondition* cond = condition(atSuspend, kConditionSuspended);
  ASSERT_NE(cond, nullptr);
  EXPECT_TRUE(cond->status);
  EXPECT_EQ(cond->reason, "JobSuspended");
  EXPECT_EQ(jobs_->suspend(kJob)->phase, JobPhase::kSuspended) << "a second suspend changes nothing";
  EXPECT_FALSE(jobs_->isFinished(kJob));

  auto resumed = jobs_->resume(kJob);
  ASSERT_TRUE(resumed.isOk()) << resumed.status();
  EXPECT_EQ(resumed->phase, JobPhase::kPending);
  EXPECT_FALSE(jobs_->spec(kJob)->suspend);
  const JobRecord atResume = record();
  cond = condition(atResume, kConditionSuspended);
  ASSERT_NE(cond, nullptr);
  EXPECT_FALSE(cond->status);
  EXPECT_EQ(cond->reason, "JobResumed");
  // Fresh processes register and form generation 2; a heartbeat of generation 1 is fenced.
  incarnations_.clear();
  auto g0 = join("j-w0", 200);
  ASSERT_TRUE(g0.isOk()) << g0.status();
  EXPECT_EQ(*g0, 2);
  ASSERT_TRUE(join("j-w1", 201).isOk());
  advance(0.3);
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kRunning; })) << allEvents();
  EXPECT_EQ(record().generation, 2);
  EXPECT_FALSE(beat("j-w0", 0, 1).isOk()) << "generation 1 is over";
  EXPECT_TRUE(beat("j-w0", 0, 2).isOk());
  EXPECT_EQ(events("JobResumed", 1).size(), 1u);
  EXPECT_EQ(record().restarts, 0);
}

// Submitted with spec.suspend: stored Suspended, no worker may join; a resume starts them; a
// restarted controller keeps a Suspended job suspended.
TEST_F(JobManagerStopTest, ASuspendedSubmissionStartsNoWorkerUntilResumed) {
  submit("  suspend: true\n");
  EXPECT_EQ(record().phase, JobPhase::kSuspended);
  EXPECT_FALSE(join("j-w0", 100).isOk()) << "a suspended job takes no registration";
  jobs_->stop();
  jobs_ = std::make_unique<JobManager>(JobManagerOptions{}, *store_, launcher_, clock_);
  ASSERT_TRUE(jobs_->start().isOk());
  EXPECT_EQ(record().phase, JobPhase::kSuspended);
  EXPECT_TRUE(jobs_->spec(kJob)->suspend);
  auto resumed = jobs_->resume(kJob);
  ASSERT_TRUE(resumed.isOk()) << resumed.status();
  EXPECT_EQ(resumed->phase, JobPhase::kPending);
  EXPECT_TRUE(join("j-w0", 100).isOk());
  EXPECT_EQ(jobs_->resume(kJob)->phase, JobPhase::kPending) << "not suspended: nothing to do";
}

TEST_F(JobManagerStopTest, CancellingASuspendedJobEndsIt) {
  submit("  suspend: true\n");
  ASSERT_EQ(record().phase, JobPhase::kSuspended);
  ASSERT_TRUE(jobs_->cancel(kJob).isOk());
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kCancelled; })) << allEvents();
  EXPECT_TRUE(jobs_->isFinished(kJob));
}

TEST_F(JobManagerStopTest, AFinishedJobCannotBeSuspended) {
  ASSERT_NO_FATAL_FAILURE(running());
  ASSERT_TRUE(jobs_->cancel(kJob).isOk());
  EXPECT_EQ(jobs_->suspend(kJob).status().code(), StatusCode::kFailedPrecondition) << "being cancelled";
  exited("j-w0", 100, false);
  exited("j-w1", 101, false);
  ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kCancelled; })) << allEvents();
  EXPECT_EQ(jobs_->suspend(kJob).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(jobs_->resume(kJob).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(jobs_->suspend("nope").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ddp::controller
