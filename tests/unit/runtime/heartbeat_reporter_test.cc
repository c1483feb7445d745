// HeartbeatReporter against a fake controller (tests/support/fake_controller.h: an
// httplib::Server on 127.0.0.1 speaking docs/API.md's worker routes). Timing checks use real
// time: the reporter's period and controller timeout are real-time bounds by design.
#include "worker/control/heartbeat_reporter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/support/fake_controller.h"

namespace ddp::runtime {
namespace {

using namespace std::chrono_literals;
using testing::FakeController;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kJob = "fmnist";
constexpr const char* kToken = "tok";

std::unique_ptr<ControllerClient> makeClient(const std::string& url) {
  ControllerClientOptions o;
  o.url = url;
  o.job = kJob;
  o.token = kToken;
  o.workerId = "fmnist-w0";
  auto c = ControllerClient::create(o);
  EXPECT_TRUE(c.isOk()) << c.status();
  return std::move(*c);
}

HeartbeatReporterOptions options(Duration period, Duration controllerTimeout, int64_t generation = 1) {
  HeartbeatReporterOptions o;
  o.workerId = "fmnist-w0";
  o.rank = 0;
  o.generation = generation;
  o.period = period;
  o.controllerTimeout = controllerTimeout;
  return o;
}

// The stop flag the reporter sets, as SIGTERM's handler would.
struct StopFlag {
  std::atomic<bool> flag{false};
  HeartbeatReporter::StopFn fn() {
    return [this] { flag.store(true); };
  }
  bool waitSet(Duration limit) {
    const auto end = SteadyClock::now() + limit;
    while (!flag.load() && SteadyClock::now() < end) std::this_thread::sleep_for(5ms);
    return flag.load();
  }
};

std::unique_ptr<HeartbeatReporter> makeReporter(const ControllerClient& client, HeartbeatReporterOptions o,
                                                StopFlag& stop) {
  auto r = HeartbeatReporter::create(client, std::move(o), stop.fn());
  EXPECT_TRUE(r.isOk()) << r.status();
  return std::move(*r);
}

TEST(HeartbeatReporterTest, PostsEveryPeriod) {
  FakeController fake(kJob, kToken);
  auto client = makeClient(fake.url());
  StopFlag stop;
  auto reporter = makeReporter(*client, options(100ms, 10s), stop);
  const auto t0 = SteadyClock::now();
  reporter->start();
  std::this_thread::sleep_for(1050ms);
  reporter->stop();
  const auto beats = fake.heartbeats();
  // One at once, then one every 100 ms: 11 in 1.05 s (a loaded machine may lose one or two).
  EXPECT_GE(beats.size(), 9u);
  EXPECT_LE(beats.size(), 12u);
  ASSERT_FALSE(beats.empty());
  EXPECT_LT(std::chrono::duration<double>(beats[0].at - t0).count(), 0.1);  // the first goes out at once
  for (size_t i = 1; i < beats.size(); ++i) {
    EXPECT_GE(std::chrono::duration<double>(beats[i].at - beats[i - 1].at).count(), 0.08) << i;
  }
  EXPECT_EQ(beats[0].report.state, WorkerState::kRunning);
  EXPECT_EQ(beats[0].report.step, 0);  // nothing published yet: step 0 during rendezvous
  EXPECT_EQ(reporter->heartbeatsSucceeded(), static_cast<int64_t>(beats.size()));
  EXPECT_FALSE(stop.flag.load());
  EXPECT_TRUE(reporter->fatalStatus().isOk());
}

TEST(HeartbeatReporterTest, ReportsTheLatestSnapshotAndTheCollectives) {
  FakeController fake(kJob, kToken);
  auto client = makeClient(fake.url());
  StopFlag stop;
  auto reporter = makeReporter(*client, options(50ms, 10s), stop);
  reporter->setCollectivesSource([] { return std::vector<CollectiveView>{{"gloo", 9, 9, "allreduce", 0.5, 64}}; });
  TrainingProgress p;
  p.step = 42;
  p.totalSteps = 100;
  p.epoch = 1;
  p.epochs = 2;
  p.loss = 0.25;
  p.testAccuracy = 0.8;
  p.valLoss = 3.25;
  p.tokensPerSecond = 5000;
  p.mfu = 0.3;
  p.samples = 1344;
  p.steps = 42;
  p.commBytes = 1000;
  p.compressionUncompressedBytes = 800;
  p.compressionSentBytes = 80;
  p.checkpoint = TrainingProgress::Checkpoint{40, 5000, "/c/step-40"};
  reporter->publish(p);
  reporter->start();
  const auto end = SteadyClock::now() + 3s;
  while (fake.heartbeats().empty() && SteadyClock::now() < end) std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(reporter->finish(WorkerState::kSucceeded, "done", Deadline::after(2s)).isOk());
  const auto beats = fake.heartbeats();
  ASSERT_GE(beats.size(), 2u);
  const Heartbeat& r = beats.front().report;
  EXPECT_EQ(r.step, 42);
  EXPECT_EQ(r.epoch, 1);
  EXPECT_DOUBLE_EQ(r.loss, 0.25);
  EXPECT_EQ(r.testAccuracy, 0.8);
  EXPECT_EQ(r.valLoss, 3.25);
  EXPECT_EQ(r.tokensPerSecond, 5000);
  EXPECT_EQ(r.mfu, 0.3);
  EXPECT_EQ(r.counters.samples, 1344);
  EXPECT_EQ(r.counters.commBytes, 1000);
  EXPECT_EQ(r.counters.compressionUncompressedBytes, 800);
  EXPECT_EQ(r.counters.compressionSentBytes, 80);
  ASSERT_TRUE(r.checkpoint.has_value());
  EXPECT_EQ(r.checkpoint->path, "/c/step-40");
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].seq, 9);
  // finish() sent the last one with the outcome (and the collectives source can be cleared).
  EXPECT_EQ(beats.back().report.state, WorkerState::kSucceeded);
  EXPECT_EQ(beats.back().report.message, "done");
  EXPECT_EQ(beats.back().report.step, 42);
  reporter->setCollectivesSource({});
}

TEST(HeartbeatReporterTest, StopCommandSetsTheStopFlag) {
  FakeController fake(kJob, kToken);
  auto client = makeClient(fake.url());
  StopFlag stop;
  auto reporter = makeReporter(*client, options(50ms, 10s), stop);
  fake.setCommand({CommandType::kCheckpoint, 30});
  reporter->start();
  const auto end = SteadyClock::now() + 3s;
  while (reporter->commands().empty() && SteadyClock::now() < end) std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(stop.flag.load());  // checkpoint is recorded, not a stop
  fake.setCommand({CommandType::kStop, -1});
  EXPECT_TRUE(stop.waitSet(3s));
  EXPECT_TRUE(reporter->stopCommanded());
  EXPECT_TRUE(reporter->fatalStatus().isOk());  // a commanded stop is a clean stop
  reporter->stop();
  const auto commands = reporter->commands();
  ASSERT_GE(commands.size(), 2u);
  EXPECT_EQ(commands[0], (Command{CommandType::kCheckpoint, 30}));
  EXPECT_EQ(commands[1].type, CommandType::kStop);
  EXPECT_EQ(commands.size(), 2u);  // repeats are folded
}

TEST(HeartbeatReporterTest, UnreachableControllerStopsTrainingWithTheReason) {
  const std::string url = "http://127.0.0.1:" + std::to_string(testing::closedLocalPort());
  auto client = makeClient(url);
  StopFlag stop;
  auto reporter = makeReporter(*client, options(100ms, 500ms), stop);
  const auto t0 = SteadyClock::now();
  reporter->start();
  ASSERT_TRUE(stop.waitSet(3s));
  const double took = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  EXPECT_GE(took, 0.45);
  EXPECT_LT(took, 1.5);
  const Status why = reporter->fatalStatus();
  EXPECT_EQ(why.code(), StatusCode::kUnavailable);
  EXPECT_NE(why.message().find("cannot reach the controller at " + url + " for 0.5 s: stopping"), std::string::npos)
      << why;
  EXPECT_FALSE(reporter->stopCommanded());
  // No last heartbeat either: the reporter already waited controllerTimeout for it.
  const auto t1 = SteadyClock::now();
  EXPECT_EQ(reporter->finish(WorkerState::kFailed, why.message(), Deadline::after(3s)), why);
  EXPECT_LT(std::chrono::duration<double>(SteadyClock::now() - t1).count(), 0.2);
}

// A fenced worker aborts its communicator (its peers' collectives fail and they rejoin) and never
// requests a stop, which the trainer's flag allreduce would hand to every peer: the abort target
// is called, also when it is set after the 410 came.
TEST(HeartbeatReporterTest, FencedWorkerAbortsInsteadOfStoppingItsPeers) {
  FakeController fake(kJob, kToken);
  fake.setGeneration(5);
  auto client = makeClient(fake.url());
  StopFlag stop;
  auto reporter = makeReporter(*client, options(50ms, 10s, /*generation=*/4), stop);
  reporter->start();
  const auto t0 = SteadyClock::now();
  while (reporter->fatalStatus().isOk() && SteadyClock::now() - t0 < 3s) std::this_thread::sleep_for(10ms);
  const Status why = reporter->fatalStatus();
  EXPECT_TRUE(isFenced(why)) << why;
  EXPECT_NE(why.message().find("fenced: stale generation, current 5"), std::string::npos) << why;
  EXPECT_FALSE(stop.flag.load()) << "a stop would reach the peers";
  EXPECT_TRUE(reporter->abortCommanded());
  Status aborted;
  reporter->setAbortTarget([&aborted](const Status& s) { aborted = s; });
  EXPECT_EQ(aborted.code(), StatusCode::kAborted);
  // No last heartbeat: the generation is gone.
  EXPECT_TRUE(isFenced(reporter->finish(WorkerState::kFailed, "x", Deadline::after(1s))));
  EXPECT_TRUE(fake.heartbeats().empty());
}

TEST(HeartbeatReporterTest, PublishNeverWaitsForAStalledController) {
  FakeController fake(kJob, kToken);
  fake.setHeartbeatDelay(1500ms);  // every heartbeat hangs in the server
  auto client = makeClient(fake.url());
  StopFlag stop;
  HeartbeatReporterOptions o = options(20ms, 30s);
  o.requestTimeout = 2s;
  auto reporter = makeReporter(*client, o, stop);
  reporter->start();
  std::this_thread::sleep_for(200ms);  // a heartbeat is now in flight, its handler asleep
  TrainingProgress p;
  double worst = 0;
  for (int i = 0; i < 2000; ++i) {
    p.step = i;
    const auto t0 = SteadyClock::now();
    reporter->publish(p);
    worst = std::max(worst, std::chrono::duration<double>(SteadyClock::now() - t0).count());
  }
  EXPECT_LT(worst, 1e-3);
  EXPECT_TRUE(fake.heartbeats().empty());  // indeed still stalled
  reporter->stop();
}

TEST(HeartbeatReporterTest, OptionsComeFromTheSpecAndAreValidated) {
  TimeoutsSpec t;
  t.heartbeatSeconds = 0.25;
  t.controllerSeconds = 7;
  HeartbeatReporterOptions o = HeartbeatReporterOptions::fromSpec(t);
  EXPECT_EQ(o.period, std::chrono::milliseconds(250));
  EXPECT_EQ(o.controllerTimeout, std::chrono::seconds(7));
  EXPECT_EQ(o.validate().code(), StatusCode::kInvalidArgument);  // no worker id
  o.workerId = "w";
  EXPECT_TRUE(o.validate().isOk());
  o.period = Duration::zero();
  EXPECT_NE(o.validate().message().find("heartbeatSeconds"), std::string::npos);
}

}  // namespace
}  // namespace ddp::runtime

namespace ddp::runtime {
namespace {

TEST(HeartbeatReporterTest, AbortCommandAbortsTheBackendAndEndsTheGeneration) {
  FakeController fake(kJob, kToken);
  auto client = makeClient(fake.url());
  StopFlag stop;
  auto reporter = makeReporter(*client, options(50ms, 10s), stop);
  std::atomic<int> aborts{0};
  std::string why;
  std::mutex mu;
  reporter->setAbortTarget([&](const Status& st) {
    std::lock_guard<std::mutex> lock(mu);
    why = st.message();
    ++aborts;
  });
  fake.setCommand({CommandType::kAbort, -1});
  reporter->start();
  const auto end = SteadyClock::now() + 3s;
  while (!reporter->abortCommanded() && SteadyClock::now() < end) std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(reporter->abortCommanded());
  std::this_thread::sleep_for(200ms);  // the thread ended: no further heartbeats, no second abort
  const size_t beats = fake.heartbeats().size();
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(fake.heartbeats().size(), beats) << "the reporter of an ended generation stops";
  EXPECT_EQ(aborts.load(), 1);
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_NE(why.find("the controller ended generation"), std::string::npos) << why;
  }
  EXPECT_FALSE(stop.flag.load()) << "abort is not a stop: the worker rejoins";
  // A target set after the abort arrived is called at once (the backend was still being built).
  std::atomic<int> late{0};
  reporter->setAbortTarget([&](const Status&) { ++late; });
  EXPECT_EQ(late.load(), 1);
  reporter->setAbortTarget({});
  reporter->stop();
}

TEST(HeartbeatReporterTest, CheckpointCommandRaisesTheTrainersFlag) {
  FakeController fake(kJob, kToken);
  auto client = makeClient(fake.url());
  StopFlag stop;
  auto reporter = makeReporter(*client, options(50ms, 10s), stop);
  fake.setCommand({CommandType::kCheckpoint, 30});
  reporter->start();
  const auto end = SteadyClock::now() + 3s;
  while (!reporter->checkpointRequested().load() && SteadyClock::now() < end) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(reporter->checkpointRequested().load());
  reporter->stop();
}

// The `flightRecord` command: the next heartbeat goes out at once (the period here is 2 s) and
// carries the flight record source's ops; heartbeats before carry none.
TEST(HeartbeatReporterTest, FlightRecordCommandSendsTheRecordAtOnce) {
  FakeController fake(kJob, kToken);
  auto client = makeClient(fake.url());
  StopFlag stop;
  auto reporter = makeReporter(*client, options(2s, 10s), stop);
  const std::vector<FlightOp> ops = {{"gloo", 812, "allreduce", 4200000, "running", 6.1, 6.0, -1}};
  reporter->setFlightRecordSource([&] { return ops; });
  fake.setCommand({CommandType::kFlightRecord, 0});
  const auto start = SteadyClock::now();
  reporter->start();
  const auto end = start + 1500ms;
  auto withRecord = [&] {
    for (const auto& h : fake.heartbeats()) {
      if (!h.report.flightRecord.empty()) return true;
    }
    return false;
  };
  while (!withRecord() && SteadyClock::now() < end) std::this_thread::sleep_for(5ms);
  fake.setCommand({CommandType::kNone, 0});
  const auto beats = fake.heartbeats();
  ASSERT_GE(beats.size(), 2u) << "a second heartbeat within a period";
  EXPECT_TRUE(beats[0].report.flightRecord.empty()) << "only in answer to the command";
  EXPECT_EQ(beats[1].report.flightRecord, ops);
  EXPECT_LT(beats[1].at - start, 1s);
  reporter->setFlightRecordSource({});
  reporter->stop();
}

// Note [Heartbeats while waiting]: a collective older than the period makes the reporter beat
// every 200 ms instead of every period (here 2 s).
TEST(HeartbeatReporterTest, BeatsFasterWhileACollectiveWaitsLongerThanAPeriod) {
  FakeController fake(kJob, kToken);
  auto client = makeClient(fake.url());
  StopFlag stop;
  auto reporter = makeReporter(*client, options(2s, 30s), stop);
  reporter->setCollectivesSource([] { return std::vector<CollectiveView>{{"gloo", 9, 9, "allreduce", 2.5, 64}}; });
  reporter->start();
  const auto end = SteadyClock::now() + 10s;
  while (fake.heartbeats().size() < 4 && SteadyClock::now() < end) std::this_thread::sleep_for(5ms);
  reporter->stop();
  const auto beats = fake.heartbeats();
  ASSERT_GE(beats.size(), 4u);
  EXPECT_LT(std::chrono::duration<double>(beats[3].at - beats[0].at).count(), 1.9)
      << "three beats within one 2 s period";
  reporter->setCollectivesSource({});
}

}  // namespace
}  // namespace ddp::runtime
