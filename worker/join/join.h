#pragma once
// Join: training with uneven inputs across ranks (PyTorch's torch.distributed.algorithms.Join).
//
// Usage (a C++ scope instead of a Python context manager):
//   auto join = Join::create({&ddp, &zero}, options);    // enters the scope
//   for (batch : myBatches) { ddp forward/backward; zero.step(); }  // joinables notify
//   DDP_RETURN_IF_ERROR((*join)->finish(deadline));       // shadow loop until all joined
//
// Note [Join protocol]
// Every active iteration, the first joinable calls notifyJoinContext(), which issues an
// allreduce of ones (async; its result is the number of still-active ranks, which DDP uses when
// divideByInitialWorldSize is false). A rank that ran out of data calls finish() and loops:
//   1. allreduce(zeros): matches the active ranks' notify allreduce; the sum counts them;
//   2. count == 0: everyone has joined -> postHook(isLastJoiner) on every hook, done;
//   3. throw mode: allreduce(ones) (matching the active ranks' second notify allreduce, of
//      zeros, which therefore comes back non-zero) and return an error: every rank gets an
//      error Status within the same iteration;
//   4. otherwise mainHook() of every hook in joinable order (shadowing one iteration), again.
// isLastJoiner is true on a rank that saw count == 0 in its first round. After
// kDefaultSkewWarningRounds rounds a warning is logged once (the inputs are badly uneven).
// A rank in its shadow loop is "joined": its own joinables' notify calls are no-ops there (a
// ZeRO main hook calls step(), which must not issue a second notify).
//
// Destruction without finish() (e.g. an error path) runs no collectives: it only detaches the
// joinables. Peers still iterating then wait for this rank until their deadlines: finish() is
// the normal way out; skipping it is safe for this process, not for the job.
//
// All joinables must share one process group (same Backend object): create() rejects others.
// Thread model: create, finish, notifyJoinContext and destruction run on the training thread.

#include <memory>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/join/joinable.h"

namespace ddp::join {

inline constexpr int kDefaultSkewWarningRounds = 1000;

struct JoinOptions {
  bool enable = true;
  bool throwOnEarlyTermination = false;
  JoinHookOptions hookOptions;
  int skewWarningRounds = kDefaultSkewWarningRounds;
};

// The first joinable's in-flight "I am still active" allreduce.
class JoinNotification {
 public:
  JoinNotification(comm::WorkPtr work, std::shared_ptr<float> count) : work_(std::move(work)), count_(std::move(count)) {}
  ~JoinNotification();
  JoinNotification(const JoinNotification&) = delete;
  JoinNotification& operator=(const JoinNotification&) = delete;
  // Waits for the allreduce; returns how many ranks are still active (this one included).
  Result<int> activeRanks(Deadline deadline);

 private:
  comm::WorkPtr work_;
  std::shared_ptr<float> count_;  // the allreduce buffer; outlives the Work (see destructor)
};

class Join {
 public:
  static Result<std::unique_ptr<Join>> create(std::vector<Joinable*> joinables, JoinOptions options = {});
  ~Join();
  Join(const Join&) = delete;
  Join& operator=(const Join&) = delete;

  // This rank has no more inputs: runs the shadow loop (Note [Join protocol]) until every rank
  // has joined, then the post hooks. Call at most once. Returns the first error (a collective
  // failing, the deadline passing, or early termination in throw mode).
  Status finish(Deadline deadline);

  // Called by a joinable before its per-iteration collectives. Returns null when this call
  // issues nothing (not the first joinable, not in an enabled Join, or already joined). In
  // throw mode it also runs a blocking allreduce and returns an error if any rank has joined.
  static Result<std::shared_ptr<JoinNotification>> notifyJoinContext(Joinable& joinable, Deadline deadline);

  const JoinOptions& options() const { return options_; }
  // Shadow rounds run by finish() so far (each with count > 0), and whether the skew warning fired.
  int rounds() const { return rounds_; }
  bool warnedSkew() const { return warnedSkew_; }
  // Ranks still active in the current shadow round (read by main hooks; 0 before finish()).
  int lastActiveCount() const { return lastActiveCount_; }

 private:
  Join(std::vector<Joinable*> joinables, JoinOptions options);
  Result<int> countActive(Deadline deadline);

  std::vector<Joinable*> joinables_;
  JoinOptions options_;
  // Created at construction, like PyTorch: a joinable reads its hook options (e.g. DDP's
  // divideByInitialWorldSize) while the rank is still active.
  std::vector<std::unique_ptr<JoinHook>> hooks_;
  int lastActiveCount_ = 0;
  bool finished_ = false;
  int rounds_ = 0;
  bool warnedSkew_ = false;
};

}  // namespace ddp::join
