#include "tests/support/recording_backend.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>

namespace ddp::comm {

struct RecordingBackend::State {
  struct Timer {
    TimePoint due;
    uint64_t id;
    std::shared_ptr<CompletionWork> outer;
    Status status;
  };
  struct Polled {
    WorkPtr inner;
    uint64_t id;
    std::shared_ptr<CompletionWork> outer;
    Status injected;
    Duration delay;
  };

  mutable std::mutex mu;
  mutable std::condition_variable cv;  // log grew, timers/polls changed, or stop
  std::deque<RecordedOp> log;          // guarded by mu; entry id = base + index
  uint64_t base = 0;                   // guarded by mu
  std::vector<FaultRule> rules;        // guarded by mu
  std::vector<uint64_t> ruleCounts;    // guarded by mu
  bool coalescing = false;             // guarded by mu
  size_t coalescedBytes = 0;           // guarded by mu
  std::vector<Timer> timers;           // guarded by mu
  std::vector<Polled> polled;          // guarded by mu
  std::vector<std::pair<uint64_t, std::weak_ptr<CompletionWork>>> dropped;  // guarded by mu
  bool stop = false;                   // guarded by mu

  // Records the end of op `id` and completes its Work (never under mu).
  void finish(uint64_t id, const std::shared_ptr<CompletionWork>& outer, const Status& st) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (id >= base && id - base < log.size() && !log[id - base].completed) {
        log[id - base].completed = SystemClock::instance().now();
        log[id - base].status = st;
      }
    }
    outer->complete(st);
  }

  void innerDone(uint64_t id, const std::shared_ptr<CompletionWork>& outer, const Status& inner,
                 const Status& injected, Duration delay) {
    Status st = injected.isOk() ? inner : injected;
    if (delay <= Duration::zero()) {
      finish(id, outer, st);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      timers.push_back({SystemClock::instance().now() + delay, id, outer, st});
    }
    cv.notify_all();
  }

  void runCompleter() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      const TimePoint now = SystemClock::instance().now();
      std::vector<Timer> due;
      std::vector<Polled> done;
      for (auto it = timers.begin(); it != timers.end();) {
        if (stop || it->due <= now) {
          due.push_back(std::move(*it));
          it = timers.erase(it);
        } else {
          ++it;
        }
      }
      for (auto it = polled.begin(); it != polled.end();) {
        if (it->inner->isCompleted()) {
          done.push_back(std::move(*it));
          it = polled.erase(it);
        } else {
          ++it;
        }
      }
      if (!due.empty() || !done.empty()) {
        lock.unlock();
        for (auto& t : due) finish(t.id, t.outer, t.status);
        for (auto& p : done) innerDone(p.id, p.outer, p.inner->status(), p.injected, p.delay);
        lock.lock();
        continue;
      }
      if (stop) break;
      TimePoint next = TimePoint::max();
      for (const auto& t : timers) next = std::min(next, t.due);
      if (!polled.empty()) next = std::min(next, now + std::chrono::milliseconds(1));
      if (next == TimePoint::max()) {
        cv.wait(lock);
      } else {
        cv.wait_until(lock, next);
      }
    }
    // Inner ops that offer no callbacks and are still running: nobody will watch them now.
    std::vector<Polled> left;
    left.swap(polled);
    lock.unlock();
    for (auto& p : left) {
      finish(p.id, p.outer, abortedError("recording backend destroyed with the op pending"));
    }
  }
};

RecordingBackend::RecordingBackend(Backend& inner)
    : inner_(&inner), state_(std::make_shared<State>()), completer_([s = state_] { s->runCompleter(); }) {}

RecordingBackend::RecordingBackend(std::unique_ptr<Backend> inner)
    : owned_(std::move(inner)),
      inner_(owned_.get()),
      state_(std::make_shared<State>()),
      completer_([s = state_] { s->runCompleter(); }) {}

RecordingBackend::~RecordingBackend() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  completer_.join();
}

std::vector<RecordedOp> RecordingBackend::ops() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return {state_->log.begin(), state_->log.end()};
}

bool RecordingBackend::waitForOps(size_t n, Deadline deadline) const {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->cv.wait_until(lock, deadline.at(), [&] { return state_->log.size() >= n; });
}

void RecordingBackend::clear() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->base += state_->log.size();
  state_->log.clear();
}

void RecordingBackend::addFault(FaultRule rule) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->rules.push_back(std::move(rule));
  state_->ruleCounts.push_back(0);
}

void RecordingBackend::clearFaults() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->rules.clear();
  state_->ruleCounts.clear();
}

WorkPtr RecordingBackend::record(OpType type, size_t bytes, int peer, const OpOptions& opts,
                                 const std::function<WorkPtr()>& issue) {
  State& s = *state_;
  uint64_t id = 0;
  std::optional<FaultRule> fault;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    for (size_t i = 0; i < s.rules.size(); ++i) {
      const FaultRule& r = s.rules[i];
      if (r.type && *r.type != type) continue;
      const uint64_t count = ++s.ruleCounts[i];
      if (!fault && (r.nth == 0 || r.nth == count)) fault = r;
    }
    RecordedOp rec;
    rec.type = type;
    rec.bytes = bytes;
    rec.peer = peer;
    rec.inCoalescing = s.coalescing && type != OpType::kCoalesced;
    rec.faulted = fault.has_value();
    rec.issued = SystemClock::instance().now();
    if (rec.inCoalescing) s.coalescedBytes += bytes;
    id = s.base + s.log.size();
    s.log.push_back(rec);
  }
  s.cv.notify_all();
  const Duration timeout = opts.timeout.value_or(inner_->defaultTimeout());

  if (fault && fault->drop) {
    auto outer = std::make_shared<CompletionWork>(0, type, bytes, timeout);
    std::lock_guard<std::mutex> lock(s.mu);
    std::erase_if(s.dropped, [](const auto& d) { return d.second.expired(); });
    s.dropped.emplace_back(id, outer);
    return outer;
  }
  WorkPtr inner = issue();
  auto outer = std::make_shared<CompletionWork>(inner->seq(), type, bytes, timeout);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (id >= s.base && id - s.base < s.log.size()) s.log[id - s.base].seq = inner->seq();
  }
  const Status injected = fault ? fault->status : Status::ok();
  const Duration delay = fault ? fault->delay : Duration::zero();
  if (auto cw = std::dynamic_pointer_cast<CompletionWork>(inner)) {
    // The callback holds the state alive (not the decorator): an inner op may outlive it.
    cw->onComplete([st = state_, id, outer, injected, delay](const Status& status) {
      st->innerDone(id, outer, status, injected, delay);
    });
  } else {
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.polled.push_back({inner, id, outer, injected, delay});
    }
    s.cv.notify_all();
  }
  return outer;
}

WorkPtr RecordingBackend::allreduce(BufferView buf, ReduceOp op, const OpOptions& opts) {
  return record(OpType::kAllreduce, buf.bytes(), -1, opts, [&] { return inner_->allreduce(buf, op, opts); });
}

WorkPtr RecordingBackend::broadcast(BufferView buf, int root, const OpOptions& opts) {
  return record(OpType::kBroadcast, buf.bytes(), root, opts, [&] { return inner_->broadcast(buf, root, opts); });
}

WorkPtr RecordingBackend::allgather(BufferView in, BufferView out, const OpOptions& opts) {
  return record(OpType::kAllgather, in.bytes(), -1, opts, [&] { return inner_->allgather(in, out, opts); });
}

WorkPtr RecordingBackend::reduceScatter(BufferView in, BufferView out, ReduceOp op,
                                        const OpOptions& opts) {
  return record(OpType::kReduceScatter, in.bytes(), -1, opts,
                [&] { return inner_->reduceScatter(in, out, op, opts); });
}

WorkPtr RecordingBackend::gather(BufferView in, BufferView out, int root, const OpOptions& opts) {
  return record(OpType::kGather, in.bytes(), root, opts, [&] { return inner_->gather(in, out, root, opts); });
}

WorkPtr RecordingBackend::barrier(const OpOptions& opts) {
  return record(OpType::kBarrier, 0, -1, opts, [&] { return inner_->barrier(opts); });
}

WorkPtr RecordingBackend::send(BufferView buf, int dst, int tag, const OpOptions& opts) {
  return record(OpType::kSend, buf.bytes(), dst, opts, [&] { return inner_->send(buf, dst, tag, opts); });
}

WorkPtr RecordingBackend::recv(BufferView buf, int src, int tag, const OpOptions& opts) {
  return record(OpType::kRecv, buf.bytes(), src, opts, [&] { return inner_->recv(buf, src, tag, opts); });
}

Status RecordingBackend::startCoalescing() {
  Status st = inner_->startCoalescing();
  if (st.isOk()) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->coalescing = true;
    state_->coalescedBytes = 0;
  }
  return st;
}

WorkPtr RecordingBackend::endCoalescing() {
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->coalescing = false;
    bytes = state_->coalescedBytes;
  }
  return record(OpType::kCoalesced, bytes, -1, {}, [&] { return inner_->endCoalescing(); });
}

void RecordingBackend::abort(const Status& reason) {
  inner_->abort(reason);
  std::vector<std::pair<uint64_t, std::weak_ptr<CompletionWork>>> dropped;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    dropped.swap(state_->dropped);
  }
  const Status st = reason.code() == StatusCode::kAborted ? reason : abortedError(reason.message());
  for (auto& [id, w] : dropped) {
    if (auto p = w.lock()) state_->finish(id, p, st);
  }
}

}  // namespace ddp::comm
