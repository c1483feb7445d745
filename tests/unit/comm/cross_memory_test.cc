// Cross-memory reads (Note [Same-host allreduce]): the identity a rank publishes, the same-host
// decision, reads from this process and from a process that has exited (a real child, reaped).
// The store agreement is same_host_agreement_test's.
#include <gtest/gtest.h>

#include <gloo/common/error.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "worker/comm/cross_memory.h"

namespace ddp::comm {
namespace {

using namespace std::chrono_literals;

HostIdentity id(const std::string& boot, uint64_t ns, int64_t pid) { return {boot, ns, pid, 0x1000}; }

TEST(CrossMemoryTest, IdentityRoundTripsAndMalformedTextIsNamed) {
  auto self = thisProcess();
  ASSERT_TRUE(self.isOk()) << self.status();
  EXPECT_EQ(self->pid, static_cast<int64_t>(::getpid()));
  auto back = HostIdentity::decode(self->encode());
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(back->bootId, self->bootId);
  EXPECT_EQ(back->pidNamespace, self->pidNamespace);
  EXPECT_EQ(back->probeAddress, self->probeAddress);
  for (const std::string bad : {"", "none", "boot 1 2", "boot x 2 3", "boot 1 0 3", "boot 1 2 3 extra"}) {
    auto r = HostIdentity::decode(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("'" + bad + "'"), std::string::npos) << r.status();
  }
}

TEST(CrossMemoryTest, SameHostNeedsOneKernelAndOnePidNamespace) {
  EXPECT_TRUE(sameHost({id("b", 7, 1), id("b", 7, 2), id("b", 7, 3)}));
  EXPECT_FALSE(sameHost({id("b", 7, 1), id("c", 7, 2)}));  // another machine
  EXPECT_FALSE(sameHost({id("b", 7, 1), id("b", 8, 2)}));  // another container's PID namespace
  EXPECT_FALSE(sameHost({id("b", 7, 1)}));                 // nobody to read from
  EXPECT_FALSE(sameHost({id("", 7, 1), id("", 7, 2)}));    // unknown kernel
}

TEST(CrossMemoryTest, ReadsAnotherRanksMemoryAndNamesAnExitedPeer) {
  auto self = thisProcess();
  ASSERT_TRUE(self.isOk());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);  // reaped: the pid names no process now

  HostIdentity gone = *self;
  gone.pid = child;
  const CrossMemory memory({*self, gone});
  std::vector<double> src(100000), dst(src.size(), -1);
  for (size_t i = 0; i < src.size(); ++i) src[i] = double(i) * 0.5;
  memory.read(0, reinterpret_cast<uint64_t>(src.data()), dst.data(), dst.size() * sizeof(double));
  EXPECT_EQ(dst, src);
  EXPECT_TRUE(memory.probe(1).isOk()) << "rank 1 reads rank 0 (this process)";

  try {
    memory.read(1, reinterpret_cast<uint64_t>(src.data()), dst.data(), sizeof(double));
    ADD_FAILURE() << "read from an exited process succeeded";
  } catch (const ::gloo::IoException& e) {
    EXPECT_NE(std::string(e.what()).find("from rank 1 (pid " + std::to_string(child) + ") failed: the process has exited"),
              std::string::npos)
        << e.what();
  }
  const Status probe = memory.probe(0);
  EXPECT_EQ(probe.code(), StatusCode::kUnavailable);
  EXPECT_NE(probe.message().find("rank 1"), std::string::npos) << probe;
}

}  // namespace
}  // namespace ddp::comm
