// The Reducer's comm thread (Note [Hook ordering] in worker/ddp/comm_hook.h): runs each queued
// bucket's hook in bucket order, then completes buckets in order once their Work is done
// (finish, copy back into Parameter::grad, bucket-reduced callback).
#include <time.h>

#include <chrono>
#include <exception>
#include <string>

#include "kernels/bucket_ops.h"
#include "worker/ddp/reducer.h"

namespace ddp {
namespace {

// How often the comm thread checks in-flight Works: often for Works that cannot notify, rarely
// (a safety net) when every in-flight Work wakes it through a completion callback.
constexpr Duration kCompletionPoll = std::chrono::milliseconds(1);
constexpr Duration kNotifiedCompletionPoll = std::chrono::milliseconds(50);
constexpr size_t kNoBucket = static_cast<size_t>(-1);

comm::BufferView gradOf(const Parameter* p) { return {p->grad, p->numel(), p->dtype, p->device}; }

// CPU time of the calling thread.
double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// User code (hooks, callbacks) runs on the comm thread; an exception must not end the thread
// (or the process): it becomes an Internal status like any other hook failure. R is Status or
// a Result<T> (both built from an error Status).
template <typename R, typename F>
R guarded(const char* what, F&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return internalError(std::string("exception in ") + what + ": " + e.what());
  } catch (...) {
    return internalError(std::string("unknown exception in ") + what);
  }
}

}  // namespace

void Reducer::commLoop() {
  std::deque<size_t> inflight;  // buckets whose hook ran, in bucket order
  std::optional<Deadline> stopDeadline;
  for (;;) {
    size_t toRun = kNoBucket;
    bool shadow = false;
    {
      std::unique_lock<std::mutex> lock(sync_->mu);
      for (;;) {
        if (!sync_->queue.empty()) {
          toRun = sync_->queue.front();
          sync_->queue.pop_front();
          break;
        }
        if (!inflight.empty()) {
          const auto& work = buckets_[inflight.front()].result.work;
          if (work == nullptr || work->isCompleted()) break;
        }
        if (sync_->stop) {
          if (inflight.empty()) return;
          if (!stopDeadline) stopDeadline = Deadline::after(options_.timeout);
          if (stopDeadline->expired()) return;  // a collective hung past the timeout: give up
        }
        if (inflight.empty()) {
          sync_->cv.wait(lock);
        } else {
          bool allNotify = true;
          for (size_t b : inflight) allNotify = allNotify && buckets_[b].notifies;
          sync_->cv.wait_for(lock, allNotify ? kNotifiedCompletionPoll : kCompletionPoll);
        }
      }
      shadow = sync_->shadow;
    }
    if (toRun != kNoBucket) {
      runBucket(toRun);
      inflight.push_back(toRun);
    } else {
      completeBucket(inflight.front(), shadow);
      inflight.pop_front();
    }
  }
}

void Reducer::runBucket(size_t b) {
  Bucket& bk = buckets_[b];
  bk.result = HookResult{};
  bk.notifies = false;
  {
    std::lock_guard<std::mutex> lock(sync_->mu);
    if (!sync_->error.isOk()) return;  // an earlier bucket failed: issue nothing more
  }
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = threadCpuSeconds();
  Result<HookResult> r = guarded<Result<HookResult>>("run", [&]() -> Result<HookResult> {
    if (hook_) return hook_->run(*bk.grad);
    return HookResult{backend_.allreduce(bk.grad->buffer(), comm::ReduceOp::kSum), {}};
  });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = threadCpuSeconds() - c0;
  {
    std::lock_guard<std::mutex> lock(sync_->mu);
    hookSeconds_ += secs;
    hookCpuSeconds_ += cpu;
    if (!r.isOk()) {
      if (sync_->error.isOk()) {
        sync_->error = r.status().withContext("DDP bucket " + std::to_string(b) + " (hook '" +
                                              (hook_ ? hook_->name() : std::string("default allreduce")) + "')");
      }
      return;
    }
  }
  bk.result = std::move(r).value();
  if (auto cw = std::dynamic_pointer_cast<comm::CompletionWork>(bk.result.work)) {
    bk.notifies = true;
    // Wake the comm thread as soon as the op completes instead of at the next poll. The callback
    // may run right here (already complete) or on the backend's thread after the reducer is
    // gone, so it holds only the shared Sync, and no lock is held while registering it.
    cw->onComplete([sync = sync_](const Status&) {
      { std::lock_guard<std::mutex> lock(sync->mu); }
      sync->cv.notify_all();
    });
  }
}

void Reducer::completeBucket(size_t b, bool shadow) {
  Bucket& bk = buckets_[b];
  bool earlierError;
  {
    std::lock_guard<std::mutex> lock(sync_->mu);
    earlierError = !sync_->error.isOk();
  }
  Status st;
  if (!earlierError) {
    if (bk.result.work) st = bk.result.work->status();
    if (st.isOk() && bk.result.finish) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = threadCpuSeconds();
      st = guarded<Status>("finish", bk.result.finish);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = threadCpuSeconds() - c0;
      std::lock_guard<std::mutex> lock(sync_->mu);
      hookSeconds_ += secs;
      hookCpuSeconds_ += cpu;
    }
    if (st.isOk() && !shadow && !options_.gradientAsBucketView) {
      const BucketSpec& spec = plan_.buckets()[b];
      std::vector<kernels::FlatView> grads;
      grads.reserve(spec.params.size());
      for (size_t idx : spec.params) grads.push_back(comm::flat(gradOf(params_[idx])));
      st = kernels::unpackBucket(comm::flat(bk.grad->buffer()), grads, 1.0);
    }
    if (st.isOk() && !shadow && bucketCallback_) {
      st = guarded<Status>("bucket-reduced callback", [&] {
        bucketCallback_(*bk.grad);
        return Status::ok();
      });
    }
  }
  bk.result = HookResult{};
  {
    std::lock_guard<std::mutex> lock(sync_->mu);
    if (!st.isOk() && sync_->error.isOk()) {
      sync_->error = st.withContext("DDP bucket " + std::to_string(b) + " (hook '" +
                                    (hook_ ? hook_->name() : std::string("default allreduce")) + "')");
    }
    ++sync_->done;
    ++bucketsReduced_;
  }
  sync_->cv.notify_all();
}

}  // namespace ddp
