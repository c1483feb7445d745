#pragma once
// Reducer: the gradient-synchronisation engine of DDP. Parameters are registered once; each
// backward marks gradients ready (GradReadyFn) as it produces them; the reducer packs them into
// buckets (BucketPlan) and hands each full bucket to the comm hook on its comm thread while
// backward goes on; finalize() waits for the reductions and leaves averaged gradients in
// Parameter::grad. See docs/DDP.md for a worked example.
//
// Step protocol (training thread):
//   reducer->markGradReady(i) for every parameter (or pass reducer->gradReadyFn() to backward),
//   then reducer->finalize(deadline). Every backward ends with finalize(), no_sync ones too.
// Gradients: the model ACCUMULATES into Parameter::grad (worker/model/module.h) and the user
// zeroes them after the optimizer step. A synced step reduces whatever grad holds (so no_sync
// steps before it are summed in), and finalize() leaves the average over ranks in grad.
// With a comm hook, the hook defines the reduction (built-ins average); without one the reducer
// scales by 1/world while packing and allreduces the sum.
// gradientAsBucketView: Parameter::grad is rebound into the bucket buffer at construction
// (current contents copied) and after a bucket rebuild; backward accumulates in place. The
// destructor gives each parameter still pointing into its buckets the model's own storage back
// (Parameter::ownGrad), holding the current gradient, so the model and a later Reducer over it
// never read freed buckets. Like PyTorch's DDP, a new Reducer over the same parameters takes them
// over; the older one then leaves them alone.
//
// Errors, never hangs: marking a gradient twice in a step, an out-of-range index, finalize()
// with gradients missing (outside findUnusedParameters), registering a second hook, changing
// no_sync or the hook mid-step all return FailedPrecondition / InvalidArgument / AlreadyExists
// naming the parameter. A failed collective or hook makes the reducer broken: every later call
// returns that error (ranks may disagree on what was reduced, so recreate the reducer).
//
// Thread model: one comm thread, started by create() and joined by the destructor (before the
// buckets are freed or the gradients handed back), runs
// CommHook::run() for one bucket at a time in bucket-index order, then, in bucket order once a
// bucket's Work completed, its HookResult::finish, the copy back into Parameter::grad and the
// bucket-reduced callback (Note [Hook ordering] in worker/ddp/comm_hook.h). Every other method
// is for the training thread only (one thread), and must not be called concurrently.
// Shared step state is guarded by Sync::mu.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/thread_priority.h"
#include "kernels/flat_buffer.h"
#include "worker/comm/backend.h"
#include "worker/core/parameter.h"
#include "worker/ddp/bucket_plan.h"
#include "worker/ddp/comm_hook.h"

namespace ddp {

struct ReducerOptions {
  size_t bucketCapBytes = kDefaultBucketCapBytes;         // 25 MiB
  size_t firstBucketCapBytes = kDefaultFirstBucketCapBytes;  // 1 MiB
  // Parameters that get no gradient in a step are marked ready at finalize() and reduce as
  // zero (their grad ends as the average, i.e. zero where no rank used them).
  bool findUnusedParameters = false;
  // Parameter::grad lives inside the bucket buffer (saves a copy each way).
  bool gradientAsBucketView = false;
  // Overwrite parameters and `buffers` with rank 0's values at construction.
  bool broadcastAtStart = true;
  // Recompute buckets once after the first synced step in the observed ready order (rank 0's).
  bool rebuildBuckets = true;
  // Mixed precision: reduce in this dtype (f16 / bf16) while gradients stay in their own dtype
  // (f32 master gradients); buckets are allocated in it. Not with gradientAsBucketView.
  std::optional<DType> reduceDtype;
  // Deadline for the construction and rebuild collectives and for draining at destruction.
  Duration timeout = comm::kDefaultOpTimeout;
  // Scheduling of the comm thread, CPU parameters only (Note [Comm thread priority]); give the
  // backend's threads the same (GlooOptions::commThreadPriority).
  CommThreadPriority commThreadPriority = CommThreadPriority::kAuto;
  Status validate() const;
};

// Cumulative counters (read by the training thread between steps).
struct ReducerStats {
  uint64_t syncedSteps = 0;
  uint64_t noSyncSteps = 0;
  uint64_t shadowSteps = 0;
  double hookSeconds = 0;     // wall time inside CommHook::run + finish (or the default allreduce issue)
  double hookCpuSeconds = 0;  // CPU time of the comm thread in the same calls (hook computation,
                              // without the time multi-stage hooks spend waiting on collectives)
  uint64_t bucketsReduced = 0;
};

class Reducer {
 public:
  // Verifies that every rank registered the same shapes and dtypes, broadcasts parameters and
  // `buffers` from rank 0 (unless disabled), plans buckets and starts the comm thread. A
  // collective: every rank calls it. `params` must outlive the reducer.
  static Result<std::unique_ptr<Reducer>> create(comm::Backend& backend, std::vector<Parameter*> params,
                                                 ReducerOptions options = {},
                                                 std::vector<comm::BufferView> buffers = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Registers the hook that reduces each bucket. At most once, before the first step.
  Status registerCommHook(std::unique_ptr<CommHook> hook);
  CommHook* commHook() const { return hook_.get(); }
  // Stops and joins the comm thread (it finishes the hook call it is in: after a backend abort,
  // at once). Afterwards the hook's state is quiet and may be read (a generation that ended on
  // a fault hands it to the next: Note [Healing from live peers] in
  // worker/training/peer_state.h); no step may run any more. Idempotent; the destructor calls it.
  void stopCommThread();
  // Called on the comm thread once a bucket's reduced gradients are final (finish done, grads
  // written back), in bucket order, on synced steps only. Set before the first step or between
  // steps. Must not issue collectives.
  Status setBucketReducedCallback(std::function<void(GradBucket&)> callback);

  // no_sync: while set, backward only accumulates locally; the next synced step reduces the sum.
  // Changeable only between steps.
  Status setNoSync(bool noSync);
  bool noSync() const { return noSync_; }

  // Gradient of parameter `index` is final for this step. The first call after finalize()
  // starts a step.
  Status markGradReady(size_t index);
  // A GradReadyFn for Module::backward: calls markGradReady and keeps the first error for
  // finalize() to return.
  GradReadyFn gradReadyFn();
  // Ends the step: on a synced step, launches what findUnusedParameters fills in, waits for every
  // bucket and leaves the reduced gradients in Parameter::grad; rebuilds buckets after the first
  // synced step. On a no_sync step, returns at once.
  Status finalize(Deadline deadline);

  // For Join: issues the collectives of one synced step over zero-filled buckets (same buckets,
  // same order, same hook), calls no bucket callback and takes part in the one-time rebuild like
  // a synced step does. Only between steps. Nothing is copied back into Parameter::grad; with
  // gradientAsBucketView the gradients ARE the bucket buffers, so they end up holding the
  // reduced result (the other ranks' average with this rank's zeros).
  Status runShadowStep(Deadline deadline);

  const BucketPlan& plan() const { return plan_; }
  bool bucketsRebuilt() const { return rebuilt_; }
  const std::vector<Parameter*>& parameters() const { return params_; }
  comm::Backend& backend() const { return backend_; }
  const ReducerOptions& options() const { return options_; }
  // The flat buffer of bucket `b` (reduce dtype). Valid until the next rebuild.
  comm::BufferView bucketBuffer(size_t b) const;
  ReducerStats stats() const;

 private:
  struct Bucket {
    kernels::FlatBuffer storage;
    DType dtype = DType::kF32;        // buffer dtype (the reduce dtype)
    std::vector<comm::BufferView> views;  // per-parameter slices of storage
    std::unique_ptr<GradBucket> grad;     // handed to the hook
    size_t pending = 0;               // parameters not yet ready (training thread)
    bool ready = false;               // training thread
    HookResult result;                // comm thread
    bool notifies = false;            // comm thread: result.work wakes the comm thread on completion
  };
  // State shared with the comm thread and with Work completion callbacks (which may outlive the
  // reducer, hence shared_ptr).
  struct Sync {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<size_t> queue;  // guarded by mu: buckets handed to the comm thread
    size_t done = 0;           // guarded by mu: buckets finished this step
    Status error;              // guarded by mu: first comm-thread error (sticky)
    bool shadow = false;       // guarded by mu: the current step is a shadow step
    bool stop = false;         // guarded by mu
  };

  Reducer(comm::Backend& backend, std::vector<Parameter*> params, ReducerOptions options);
  Status buildBuckets(const std::vector<size_t>& order);
  // Destructor, after the comm thread is joined (gradientAsBucketView).
  void returnGradStorage();
  Status packParam(size_t index);
  void launchReadyBuckets();
  Status beginStepIfNeeded();
  Status waitForBuckets(Deadline deadline, const char* what);
  void resetStep();
  Status rebuildIfDue(Deadline deadline);
  Status brokenStatus() const;
  double packScale() const;

  // Comm thread.
  void commLoop();
  void runBucket(size_t b);
  void completeBucket(size_t b, bool shadow);

  comm::Backend& backend_;
  const std::vector<Parameter*> params_;
  const ReducerOptions options_;
  BucketPlan plan_;
  std::vector<Bucket> buckets_;
  std::unique_ptr<CommHook> hook_;
  std::function<void(GradBucket&)> bucketCallback_;
  std::shared_ptr<Sync> sync_;
  std::thread commThread_;

  // Training-thread step state.
  bool stepActive_ = false;
  bool noSync_ = false;
  bool rebuilt_ = false;
  size_t nextLaunch_ = 0;
  size_t readyCount_ = 0;
  std::vector<bool> ready_;          // marked in this step
  std::vector<bool> usedSinceSync_;  // marked in any step since the last synced one
  std::vector<size_t> readyOrder_;   // recorded on the first synced step (for the rebuild)
  Status stepError_;                 // first error seen by gradReadyFn in this step
  Status broken_;                    // sticky failure

  // Stats: hook*Seconds_/bucketsReduced_ written by the comm thread, guarded by sync_->mu.
  double hookSeconds_ = 0;
  double hookCpuSeconds_ = 0;
  uint64_t bucketsReduced_ = 0;
  uint64_t syncedSteps_ = 0, noSyncSteps_ = 0, shadowSteps_ = 0;
};

}  // namespace ddp
