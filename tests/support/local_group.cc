#include "tests/support/local_group.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

namespace ddp::comm {

// Note [LocalGroup matching]
// Collectives: rank r's k-th collective goes into slot k. When every rank has arrived the slot's
// ops move, in completion order, to the executor's ready queue; since each rank issues in order,
// slot k is always full before slot k+1, so one executor thread running the queue in order keeps
// each caller's ops in issue order (an allreduce followed by a broadcast of the same buffer sees
// the reduced data). A slot fails as a whole (bad arguments on one rank, a deadline, an abort) and
// stays behind, failed, until every rank has arrived, so late ranks fail fast with the same cause.
// Send/recv: queues keyed by (src, dst, tag), matched first-in first-out.
// Inputs are copied before outputs are written, so in-place and aliased buffers (an allgather
// whose input is a slice of its output) give the same result as separate ones.
struct LocalGroup::State {
  using Op = LocalOp;

  State(int world, LocalGroupOptions options)
      : world_(world), options_(std::move(options)), thread_([this] { run(); }) {}

  ~State() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    // Anything left never matched: fail it so no waiter hangs.
    Failures fails;
    Status st = abortedError("local group '" + options_.name + "' destroyed with the op pending");
    for (auto& [k, slot] : slots_) failSlot(slot, st, -1, &fails);
    for (auto* q : {&sends_, &recvs_}) {
      for (auto& [k, ops] : *q) {
        for (auto& op : ops) fails.emplace_back(op.work, st);
      }
    }
    for (auto& ops : ready_) {
      for (auto& op : ops) fails.emplace_back(op.work, st);
    }
    complete(fails);
  }

  int world() const { return world_; }
  const LocalGroupOptions& options() const { return options_; }

  void submit(Op op) {
    Failures fails;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (op.type == OpType::kSend || op.type == OpType::kRecv) {
        submitP2pLocked(std::move(op), &fails);
      } else {
        submitCollectiveLocked(std::move(op), &fails);
      }
    }
    cv_.notify_all();
    complete(fails);
  }

  // Fails pending ops that need `rank` (its own with `reason`, peers' with a message naming it)
  // and makes future ones fail fast. Waits for an op being executed to finish, so no buffer of
  // the aborted rank is touched after this returns.
  void abortRank(int rank, const Status& reason) {
    Failures fails;
    {
      std::unique_lock<std::mutex> lock(mu_);
      idleCv_.wait(lock, [&] { return !executing_; });
      abortedRanks_.emplace(rank, reason);
      for (auto& [k, slot] : slots_) {
        if (!slot.failed) failSlot(slot, peerAborted(rank, reason), rank, &fails, reason);
      }
      for (auto* q : {&sends_, &recvs_}) {
        for (auto& [key, ops] : *q) {
          auto [src, dst, tag] = key;
          if (src != rank && dst != rank) continue;
          for (auto& op : ops) fails.emplace_back(op.work, op.rank == rank ? reason : peerAborted(rank, reason));
          ops.clear();
        }
      }
    }
    cv_.notify_all();
    complete(fails);
  }

  using Failures = std::vector<std::pair<std::shared_ptr<CompletionWork>, Status>>;
  struct Slot {
    std::vector<std::optional<Op>> ops;
    int arrived = 0;
    TimePoint deadline = TimePoint::max();
    bool failed = false;
    Status failure;
  };

  static void complete(Failures& fails) {
    for (auto& [w, st] : fails) w->complete(st);
  }

  static Status peerAborted(int rank, const Status& reason) {
    return abortedError("rank " + std::to_string(rank) + " aborted: " + reason.message());
  }

  // Fails every op registered in the slot; `self` (if >= 0) gets `selfStatus` instead.
  void failSlot(Slot& slot, const Status& st, int self, Failures* fails,
                const Status& selfStatus = Status::ok()) {
    slot.failed = true;
    slot.failure = st;
    for (auto& op : slot.ops) {
      if (!op) continue;
      fails->emplace_back(op->work, op->rank == self ? selfStatus : st);
      op.reset();
    }
  }

  std::optional<std::pair<int, Status>> firstAbortedLocked(int exceptRank) const {
    for (const auto& [r, st] : abortedRanks_) {
      if (r != exceptRank) return std::make_pair(r, st);
    }
    return std::nullopt;
  }

  void submitCollectiveLocked(Op op, Failures* fails) {
    const uint64_t key = op.collSeq;
    Slot& slot = slots_[key];
    if (slot.ops.empty()) slot.ops.resize(world_);
    slot.arrived++;
    const int rank = op.rank;
    if (slot.failed) {
      fails->emplace_back(op.work, slot.failure);
    } else if (!op.error.isOk()) {
      failSlot(slot, invalidArgument("rank " + std::to_string(rank) + ": " + op.error.message()),
               rank, fails, op.error);
      fails->emplace_back(op.work, op.error);
    } else if (auto ab = firstAbortedLocked(rank)) {
      Status st = peerAborted(ab->first, ab->second);
      failSlot(slot, st, -1, fails);
      fails->emplace_back(op.work, st);
    } else {
      slot.deadline = std::min(slot.deadline, op.deadline);
      slot.ops[rank] = std::move(op);
    }
    if (slot.arrived == world_) {
      if (!slot.failed) {
        std::vector<Op> ops;
        for (auto& o : slot.ops) ops.push_back(std::move(*o));
        ready_.push_back(std::move(ops));
      }
      slots_.erase(key);
    }
  }

  void submitP2pLocked(Op op, Failures* fails) {
    const bool isSend = op.type == OpType::kSend;
    const int peer = op.peer;
    if (auto it = abortedRanks_.find(peer); it != abortedRanks_.end()) {
      fails->emplace_back(op.work, peerAborted(peer, it->second));
      return;
    }
    auto key = isSend ? std::make_tuple(op.rank, peer, op.tag) : std::make_tuple(peer, op.rank, op.tag);
    auto& mine = isSend ? sends_[key] : recvs_[key];
    auto& theirs = isSend ? recvs_[key] : sends_[key];
    if (theirs.empty()) {
      mine.push_back(std::move(op));
      return;
    }
    Op other = std::move(theirs.front());
    theirs.pop_front();
    std::vector<Op> pair;
    if (isSend) {
      pair.push_back(std::move(op));
      pair.push_back(std::move(other));
    } else {
      pair.push_back(std::move(other));
      pair.push_back(std::move(op));
    }
    ready_.push_back(std::move(pair));
  }

  TimePoint nextDeadlineLocked() const {
    TimePoint t = TimePoint::max();
    for (const auto& [k, slot] : slots_) {
      if (!slot.failed) t = std::min(t, slot.deadline);
    }
    for (const auto* q : {&sends_, &recvs_}) {
      for (const auto& [key, ops] : *q) {
        for (const auto& op : ops) t = std::min(t, op.deadline);
      }
    }
    return t;
  }

  void expireLocked(TimePoint now, Failures* fails) {
    for (auto& [k, slot] : slots_) {
      if (slot.failed || slot.deadline > now) continue;
      std::string missing;
      Duration timeout{};
      OpType type = OpType::kBarrier;
      for (int r = 0; r < world_; ++r) {
        if (!slot.ops[r]) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        } else {
          timeout = std::max(timeout, slot.ops[r]->timeout);
          type = slot.ops[r]->type;
        }
      }
      failSlot(slot,
               timeoutError(std::string(opTypeName(type)) + " (collective #" + std::to_string(k) +
                            " of group '" + options_.name + "') timed out after " +
                            formatDuration(timeout) + " waiting for ranks " + missing),
               -1, fails);
    }
    for (auto* q : {&sends_, &recvs_}) {
      for (auto& [key, ops] : *q) {
        for (auto it = ops.begin(); it != ops.end();) {
          if (it->deadline > now) {
            ++it;
            continue;
          }
          fails->emplace_back(it->work,
                              timeoutError(std::string(opTypeName(it->type)) + " with peer " +
                                           std::to_string(it->root) + " tag " + std::to_string(it->tag) +
                                           " timed out after " + formatDuration(it->timeout) +
                                           " waiting for its match"));
          it = ops.erase(it);
        }
      }
    }
  }

  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (!ready_.empty()) {
        std::vector<Op> ops = std::move(ready_.front());
        ready_.pop_front();
        std::optional<Status> st;
        for (const auto& op : ops) {
          auto it = abortedRanks_.find(op.rank);
          if (it != abortedRanks_.end()) st = peerAborted(op.rank, it->second);
        }
        if (!st) {
          executing_ = true;
          lock.unlock();
          st = execute(ops);
          lock.lock();
          executing_ = false;
          idleCv_.notify_all();
        }
        lock.unlock();
        for (auto& op : ops) op.work->complete(*st);
        lock.lock();
        continue;
      }
      Failures fails;
      expireLocked(options_.clock->now(), &fails);
      if (!fails.empty()) {
        lock.unlock();
        complete(fails);
        lock.lock();
        continue;
      }
      TimePoint next = nextDeadlineLocked();
      auto wake = [&] { return stop_ || !ready_.empty() || nextDeadlineLocked() < next; };
      if (next == TimePoint::max()) {
        cv_.wait(lock, wake);
      } else if (options_.clock != &SystemClock::instance()) {
        // An injected clock moves on its own: look again every few real milliseconds.
        cv_.wait_for(lock, std::chrono::milliseconds(2), wake);
      } else {
        cv_.wait_until(lock, next, wake);
      }
    }
  }

  Status execute(std::vector<Op>& ops);

  const int world_;
  const LocalGroupOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;      // wakes the executor
  std::condition_variable idleCv_;  // signalled when executing_ turns false
  bool stop_ = false;                                       // guarded by mu_
  bool executing_ = false;                                  // guarded by mu_
  std::map<uint64_t, Slot> slots_;                          // guarded by mu_
  std::map<std::tuple<int, int, int>, std::deque<Op>> sends_, recvs_;  // guarded by mu_
  std::deque<std::vector<Op>> ready_;                       // guarded by mu_
  std::map<int, Status> abortedRanks_;                      // guarded by mu_
  std::thread thread_;  // last member: starts after the state above exists
};

namespace {

template <typename T, typename A>
struct Plain {
  using Acc = A;
  static Acc load(const char* p, size_t i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    return static_cast<Acc>(v);
  }
  static void store(char* p, size_t i, Acc v) {
    T t = static_cast<T>(v);
    std::memcpy(p + i * sizeof(T), &t, sizeof(T));
  }
};

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
struct Half {
  using Acc = float;
  static Acc load(const char* p, size_t i) {
    uint16_t v;
    std::memcpy(&v, p + i * 2, 2);
    return ToF(v);
  }
  static void store(char* p, size_t i, Acc v) {
    uint16_t h = FromF(v);
    std::memcpy(p + i * 2, &h, 2);
  }
};

float bf16Load(uint16_t b) { return bf16ToFloat(b); }
uint16_t bf16Store(float f) { return floatToBf16(f); }

// dst[i] = reduce over r of srcs[r][offset + i], for i < n.
template <typename Tr>
void reduceInto(const std::vector<const char*>& srcs, size_t offset, size_t n, char* dst,
                ReduceOp op) {
  using Acc = typename Tr::Acc;
  for (size_t i = 0; i < n; ++i) {
    Acc acc = Tr::load(srcs[0], offset + i);
    for (size_t r = 1; r < srcs.size(); ++r) {
      Acc v = Tr::load(srcs[r], offset + i);
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kAvg: acc = acc + v; break;
        case ReduceOp::kMin: acc = std::min(acc, v); break;
        case ReduceOp::kMax: acc = std::max(acc, v); break;
        case ReduceOp::kProduct: acc = acc * v; break;
      }
    }
    if (op == ReduceOp::kAvg) acc = acc / static_cast<Acc>(srcs.size());
    Tr::store(dst, i, acc);
  }
}

void reduceAny(DType dt, const std::vector<const char*>& srcs, size_t offset, size_t n, char* dst,
               ReduceOp op) {
  switch (dt) {
    case DType::kF32: return reduceInto<Plain<float, float>>(srcs, offset, n, dst, op);
    case DType::kF64: return reduceInto<Plain<double, double>>(srcs, offset, n, dst, op);
    case DType::kI32: return reduceInto<Plain<int32_t, int64_t>>(srcs, offset, n, dst, op);
    case DType::kI64: return reduceInto<Plain<int64_t, int64_t>>(srcs, offset, n, dst, op);
    case DType::kF16: return reduceInto<Half<halfToFloat, floatToHalf>>(srcs, offset, n, dst, op);
    case DType::kBF16: return reduceInto<Half<bf16Load, bf16Store>>(srcs, offset, n, dst, op);
  }
}

std::string describe(const LocalOp& op) {
  return std::string(opTypeName(op.type)) + " of " + std::to_string(op.in.count) + " " +
         dtypeName(op.in.dtype) +
         (op.type == OpType::kAllreduce || op.type == OpType::kReduceScatter
              ? std::string(" (") + reduceOpName(op.reduce) + ")"
              : "") +
         (op.type == OpType::kBroadcast || op.type == OpType::kGather
              ? " root " + std::to_string(op.root)
              : "");
}

}  // namespace

Status LocalGroup::State::execute(std::vector<Op>& ops) {
  if (ops[0].type == OpType::kSend) {
    const Op& s = ops[0];
    const Op& r = ops[1];
    if (s.in.count != r.in.count || s.in.dtype != r.in.dtype) {
      return invalidArgument("send/recv mismatch from rank " + std::to_string(s.rank) + " to " +
                             std::to_string(r.rank) + " tag " + std::to_string(s.tag) + ": sent " +
                             std::to_string(s.in.count) + " " + dtypeName(s.in.dtype) +
                             ", receiving " + std::to_string(r.in.count) + " " + dtypeName(r.in.dtype));
    }
    std::memmove(r.in.data, s.in.data, s.in.bytes());
    return Status::ok();
  }
  const Op& a = ops[0];
  for (const Op& o : ops) {
    bool same = o.type == a.type && o.in.count == a.in.count && o.in.dtype == a.in.dtype;
    if (a.type == OpType::kAllreduce || a.type == OpType::kReduceScatter) same = same && o.reduce == a.reduce;
    if (a.type == OpType::kBroadcast || a.type == OpType::kGather) same = same && o.root == a.root;
    if (!same) {
      return invalidArgument("ranks disagree on collective #" + std::to_string(a.collSeq) +
                             ": rank 0 issued " + describe(a) + ", rank " + std::to_string(o.rank) +
                             " issued " + describe(o));
    }
  }
  const size_t n = a.in.count;
  const size_t bytes = a.in.bytes();
  const int world = world_;
  // Snapshot inputs first (Note [LocalGroup matching]: aliasing).
  std::vector<std::string> snap(world);
  std::vector<const char*> srcs(world);
  if (a.type != OpType::kBarrier && a.type != OpType::kBroadcast) {
    for (int r = 0; r < world; ++r) {
      snap[r].assign(static_cast<const char*>(ops[r].in.data), bytes);
      srcs[r] = snap[r].data();
    }
  }
  switch (a.type) {
    case OpType::kAllreduce: {
      std::string result(bytes, '\0');
      reduceAny(a.in.dtype, srcs, 0, n, result.data(), a.reduce);
      if (bytes > 0) {  // an empty buffer's pointer may be null
        for (int r = 0; r < world; ++r) std::memcpy(ops[r].in.data, result.data(), bytes);
      }
      break;
    }
    case OpType::kBroadcast: {
      std::string src(static_cast<const char*>(ops[a.root].in.data), bytes);
      for (int r = 0; r < world; ++r) {
        if (r != a.root && bytes > 0) std::memcpy(ops[r].in.data, src.data(), bytes);
      }
      break;
    }
    case OpType::kAllgather:
      for (int q = 0; q < world; ++q) {
        for (int r = 0; r < world; ++r) {
          if (bytes > 0) std::memcpy(static_cast<char*>(ops[q].out.data) + r * bytes, srcs[r], bytes);
        }
      }
      break;
    case OpType::kReduceScatter: {
      const size_t chunk = ops[0].out.count;
      for (int r = 0; r < world; ++r) {
        reduceAny(a.in.dtype, srcs, r * chunk, chunk, static_cast<char*>(ops[r].out.data), a.reduce);
      }
      break;
    }
    case OpType::kGather:
      for (int r = 0; r < world; ++r) {
        if (bytes > 0) std::memcpy(static_cast<char*>(ops[a.root].out.data) + r * bytes, srcs[r], bytes);
      }
      break;
    case OpType::kBarrier:
    default:
      break;
  }
  return Status::ok();
}

LocalGroup::LocalGroup(int world, LocalGroupOptions options)
    : state_(std::make_unique<State>(world, std::move(options))) {}
LocalGroup::~LocalGroup() = default;
int LocalGroup::world() const { return state_->world(); }
const LocalGroupOptions& LocalGroup::options() const { return state_->options(); }
void LocalGroup::submit(LocalOp op) { state_->submit(std::move(op)); }
void LocalGroup::abortRank(int rank, const Status& reason) { state_->abortRank(rank, reason); }

std::shared_ptr<LocalGroup> makeLocalGroup(int world, LocalGroupOptions options) {
  DDP_CHECK(world >= 1);
  return std::make_shared<LocalGroup>(world, std::move(options));
}

}  // namespace ddp::comm
