// A network partition with real processes: each worker runs on a node of its own, a network
// namespace with its own address (tests/fault/network_namespaces.h), joined to the other nodes
// through the root namespace, where the in-process controller listens. The test plays the
// launcher (the harness's external launcher): it starts each worker with `ip netns exec`
// (which execs ddp-worker: the pid is the worker's), cuts one node's link, and starts the
// replacement the controller waits for. Skipped, with the reason, where namespaces cannot be
// made (not root, no CAP_NET_ADMIN, no iproute2).
#include <gtest/gtest.h>

#include <string>

#include "tests/fault/fault_harness.h"
#include "tests/fault/network_namespaces.h"

namespace ddp {
namespace {

using test::FaultHarness;
using test::faultJobYaml;
using test::NetworkNamespaces;

constexpr double kJobSeconds = 120;   // bound of any wait on a job (they finish in seconds)
constexpr double kStartSeconds = 30;  // bound of the wait for the workers to train (2 s here)

// Nodes: rank 0's, rank 1's (its link is cut), and the node that replaces rank 1's.
constexpr int kSurvivorNode = 0;
constexpr int kCutNode = 1;
constexpr int kReplacementNode = 2;

std::string addressOfRank(FaultHarness& h, const std::string& job, int rank) {
  for (const auto& w : h.record(job).workers) {
    if (w.rank == rank) return w.advertiseAddress;
  }
  return "";
}

// A worker cut off the network is a stopped worker as the controller sees it: its heartbeats
// stop, so it is named Unresponsive (heartbeat 1 s x 3 misses) before anyone waiting for it in
// a collective could be blamed, and rank 0 recovers in its own process. The partition heals
// while the new round waits for the replacement: the cut worker, of the ended generation, must
// not take its slot back; its next heartbeat or its rejoin gets 410 (fenced) and it exits.
// (Healing before the replacement arrives keeps this independent of the job's speed: the job
// cannot finish while its round waits.) The replacement then joins from a third node, as a node
// that takes over from a lost one does: a new address, which the new generation's Gloo
// rendezvous must use.
TEST(NetnsFaultTest, AWorkerWhoseLinkIsCutIsNamedUnresponsiveFencedAndReplacedFromAnotherNode) {
  NetworkNamespaces net(3);
  if (!net.ok()) GTEST_SKIP() << "network namespaces cannot be made here: " << net.error();
  FaultHarness h("external", "0.0.0.0");  // destroyed first: the workers go before their nodes
  ASSERT_TRUE(h.ok()) << h.startError();
  auto on = [&](int node, const std::string& logName) {
    FaultHarness::WorkerStart s;
    s.prefix = net.execPrefix(node);
    s.controllerUrl = "http://" + net.gateway(node) + ":" + std::to_string(h.workerPort());
    s.advertiseAddress = net.address(node);
    s.logName = logName;
    return s;
  };
  const std::string job = "netns";
  ASSERT_TRUE(h.submit(faultJobYaml(job, h.dir() + "/ckpt", test::kMidRunSteps, 3)).isOk());
  const pid_t w0 = h.startWorker(job, job + "-w0", on(kSurvivorNode, "w0"));
  const pid_t w1 = h.startWorker(job, job + "-w1", on(kCutNode, "w1-cut"));
  ASSERT_GT(w0, 0);
  ASSERT_GT(w1, 0);
  ASSERT_TRUE(h.waitTraining(job, 50, kStartSeconds))
      << h.describeEvents(job) << "rank 0's log:\n" << h.workerLog("w0");
  EXPECT_EQ(addressOfRank(h, job, 0), net.address(kSurvivorNode));
  EXPECT_EQ(addressOfRank(h, job, 1), net.address(kCutNode));

  ASSERT_TRUE(net.cut(kCutNode)) << net.lastOutput();
  ASSERT_TRUE(h.waitFor(20, [&] { return h.event(job, "WaitingForReplacement") != nullptr; }))
      << h.describeEvents(job);
  auto verdict = h.event(job, "Unresponsive");
  ASSERT_NE(verdict, nullptr) << h.describeEvents(job);
  EXPECT_NE(verdict->message.find("worker rank 1 (netns-w1)"), std::string::npos) << verdict->message;
  EXPECT_EQ(h.event(job, "CollectiveStuck"), nullptr) << "the waiting rank 0 is never blamed";

  ASSERT_TRUE(net.restore(kCutNode)) << net.lastOutput();
  // Bound: one heartbeat request timeout (5 s, a connect retrying SYNs lost in the cut) and a
  // period; not exited by then: the harness SIGKILLs it.
  const int status = h.waitWorker(w1, 15);
  const std::string log = h.workerLog("w1-cut");
  EXPECT_NE(status, -1) << "the cut worker exits once its link is back";
  EXPECT_NE(status, 0) << "... with a failure status";
  EXPECT_NE(log.find("fenced"), std::string::npos) << "exit status " << status << "; log:\n"
                                                   << log.substr(log.size() > 6000 ? log.size() - 6000 : 0);

  const pid_t replacement = h.startWorker(job, job + "-w1", on(kReplacementNode, "w1-replacement"));
  ASSERT_GT(replacement, 0);
  ASSERT_TRUE(h.waitFor(30, [&] { return h.event(job, "Recovered") != nullptr; }))
      << h.describeEvents(job) << "replacement's log:\n" << h.workerLog("w1-replacement");
  EXPECT_EQ(h.pidOfRank(job, 0), w0) << "the survivor recovered in its own process";
  EXPECT_EQ(h.pidOfRank(job, 1), replacement);
  EXPECT_EQ(addressOfRank(h, job, 1), net.address(kReplacementNode));
  ASSERT_TRUE(h.waitPhase(job, "Succeeded", kJobSeconds)) << h.describeEvents(job);
  EXPECT_EQ(h.record(job).restarts, 1);
  EXPECT_EQ(h.waitWorker(w0, 20), 0) << "the survivor finished the job";
  EXPECT_EQ(h.waitWorker(replacement, 20), 0) << "the replacement finished the job";
}

}  // namespace
}  // namespace ddp
