#pragma once
// Multi-rank test harness: runs `world` GlooBackends as threads of this process over one
// InMemoryStore (real Gloo, real TCP on loopback), calls fn(rank, backend) on each rank's own
// thread, and tears everything down.
//
//   Status st = test::runRanks(4, [](int rank, comm::Backend& b) {
//     std::vector<float> x(10, float(rank));
//     EXPECT_TRUE(b.allreduce(comm::viewOf(x.data(), x.size()), comm::ReduceOp::kSum)->wait().isOk());
//   });
//   EXPECT_TRUE(st.isOk()) << st;
//
// GoogleTest assertions (EXPECT_*) inside fn are fine; ASSERT_* returns from fn only.
// Thread model: runRanks blocks the caller; it starts `world` threads and joins them all.
// If the ranks are not done by `timeout`, every backend is aborted (so blocked ops fail) and
// runRanks returns Timeout after the threads have been joined.

#include <gloo/common/error.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/comm/backend.h"
#include "worker/comm/gloo_collectives.h"
#include "worker/comm/gloo_options.h"
#include "worker/comm/shared_words.h"

namespace gloo {
class Context;
}

namespace ddp::test {

inline constexpr Duration kDefaultRanksTimeout = std::chrono::seconds(60);

using RankFn = std::function<void(int rank, comm::Backend& backend)>;
// Adjusts each rank's options before its backend is created (rank, size and prefix are set).
using OptionsFn = std::function<void(comm::GlooOptions& options)>;

Status runRanks(int world, const RankFn& fn, Duration timeout = kDefaultRanksTimeout);
Status runRanks(int world, const OptionsFn& configure, const RankFn& fn,
                Duration timeout = kDefaultRanksTimeout);

// Two bare Gloo contexts (ranks 0 and 1) connected over loopback through an in-memory store,
// for tests of the pieces below GlooBackend (the header lane, the collectives).
std::vector<std::shared_ptr<::gloo::Context>> connectGlooPair();

// An allreduce-like op header (type 1) of collective `collSeq` over `count` elements.
comm::OpHeader opHeader(uint64_t collSeq, uint64_t count);

// `world` ranks of this process on one shared page (Note [Shared-memory phases]): rank 0
// creates it, the others open it through /proc/self/fd as a peer opens rank 0's; each watches
// the others (this process). Fails the test and returns fewer ranks when one cannot be made.
std::vector<std::unique_ptr<comm::SharedWords>> sharedPageOf(int world);

// Runs `fn` and returns the message of the gloo::IoException it throws ("" when none).
template <typename Fn>
std::string glooIoErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const ::gloo::IoException& e) {
    return e.what();
  }
  return "";
}

// A prefix no other call in this process has used ("test/<n>"), for tests that create
// backends themselves (Note [Store prefix per generation]).
std::string uniqueGlooPrefix(const std::string& base = "test");

}  // namespace ddp::test
