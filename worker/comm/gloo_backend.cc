#include "worker/comm/gloo_backend.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <unordered_map>

#include "common/log.h"
#include "common/thread_priority.h"
#include "worker/comm/gloo_backend_internal.h"
#include "worker/comm/cross_memory.h"
#include "worker/comm/gloo_collectives.h"
#include "worker/comm/gloo_header_lane.h"
#include "worker/comm/same_host_agreement.h"
#include "worker/comm/shared_header_exchange.h"
#include "worker/comm/shared_words.h"
#include "worker/comm/gloo_p2p.h"
#include "worker/comm/gloo_store_adapter.h"
#include "worker/comm/gloo_transport_abort.h"
#include "worker/comm/gloo_wait_set.h"

namespace ddp::comm {
namespace gloo_internal {

OpHeader headerOf(const GlooBackend::Op& op, uint64_t collSeq) {
  OpHeader h;
  h.collSeq = collSeq;
  h.type = static_cast<uint8_t>(op.type);
  h.dtype = op.type == OpType::kBarrier ? 0 : static_cast<uint8_t>(op.in.dtype);
  h.reduceOp = (op.type == OpType::kAllreduce || op.type == OpType::kReduceScatter) ? static_cast<uint8_t>(op.reduce) : 0;
  h.root = op.root;
  h.count = op.type == OpType::kReduceScatter ? op.out.count : op.type == OpType::kBarrier ? 0 : op.in.count;
  return h;
}


FlightState stateOf(const Status& st) {
  if (st.isOk()) return FlightState::kCompleted;
  if (st.code() == StatusCode::kTimeout) return FlightState::kTimedOut;
  if (st.code() == StatusCode::kAborted) return FlightState::kAborted;
  return FlightState::kFailed;
}


std::chrono::milliseconds toMs(Duration d) {
  return std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(d));
}

}  // namespace gloo_internal

using namespace gloo_internal;

Result<std::unique_ptr<GlooBackend>> GlooBackend::create(const GlooOptions& options, Store& store) {
  DDP_RETURN_IF_ERROR(options.validate());
  const std::string where = "gloo rendezvous of rank " + std::to_string(options.rank) + "/" +
                            std::to_string(options.size) + " under prefix '" + options.prefix + "'";
  // Every thread that enters Gloo runs at comm priority, this one included while it connects:
  // Gloo's I/O loop (created here, inheriting the policy) spins on a pair whose lock another
  // thread holds, so no Gloo lock may be held by a thread of lower priority (Note [Comm thread
  // priority]).
  CommPriorityScope scope(options.commThreadPriority);
  try {
    ::gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    auto device = ::gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<::gloo::rendezvous::Context>(options.rank, options.size);
    context->setTimeout(toMs(options.connectTimeout));
    GlooStoreAdapter adapter(store, options.prefix, Deadline::after(options.connectTimeout));
    context->connectFullMesh(adapter, device);
    context->setTimeout(toMs(options.timeout + kGlooTimeoutSlack));
    SameHostPaths same;
    if (options.sameHostMemory && options.size > 1) {
      auto agreed = agreeSameHost(store, options.prefix, options.rank, options.size,
                                  Deadline::after(options.connectTimeout));
      if (!agreed.isOk()) return agreed.status().withContext(where);
      same = *agreed;
      if (options.rank == 0) DDP_LOG(Info) << where << ": " << same.summary;
    }
    return std::unique_ptr<GlooBackend>(
        new GlooBackend(options, std::move(context), std::move(same.memory), std::move(same.words)));
  } catch (const std::exception& e) {
    return unavailable(where + " failed: " + e.what());
  }
}

GlooBackend::GlooBackend(const GlooOptions& options, std::shared_ptr<::gloo::Context> context,
                         std::shared_ptr<const CrossMemory> crossMemory, std::shared_ptr<SharedWords> sharedWords)
    : options_(options),
      clock_(options.clock ? *options.clock : SystemClock::instance()),
      group_("gloo:" + options.prefix + " rank " + std::to_string(options.rank) + "/" + std::to_string(options.size)),
      context_(std::move(context)) {
  waits_ = std::make_shared<GlooWaitSet>();
  readsPeerMemory_ = crossMemory != nullptr;
  sharesPage_ = sharedWords != nullptr;
  if (sharedWords) {  // Note [Shared header exchange]
    lane_ = std::make_unique<SharedHeaderExchange>(sharedWords, options_.rank, options_.size);
  } else {
    lane_ = std::make_unique<GlooHeaderLane>(context_, waits_, options_.commThreadPriority);
  }
  coll_ = std::make_unique<GlooCollectives>(context_, waits_, std::move(crossMemory), std::move(sharedWords));
  p2p_ = std::make_unique<GlooP2p>(context_, waits_, options_.commThreadPriority);
  flight_ = std::make_unique<FlightRecorder>(options_.flightRecords, clock_);
  live_ = std::make_shared<Live>();
  watchdog_ = std::make_unique<Watchdog>(
      clock_, [this](const WatchedOp& op, const Status& st) { onWatchdogTimeout(op, st); }, options_.watchdogPoll);
  executor_ = std::thread([this] {
    setThreadName("ddp-gloo-exec");
    (void)applyCommThreadPriority(options_.commThreadPriority);  // Note [Comm thread priority]
    executorLoop();
  });
}

GlooBackend::~GlooBackend() {
  CommPriorityScope scope(options_.commThreadPriority);  // tears Gloo down: at comm priority (see create())
  bool busy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    busy = !held_.empty();
  }
  {
    std::lock_guard<std::mutex> lock(live_->mu);
    for (const auto& [seq, weak] : live_->works) {  // some Work not complete yet
      auto w = weak.lock();
      busy = busy || (w && !w->isCompleted());
    }
  }
  if (busy) abort(abortedError("backend destroyed with ops still pending"));
  cv_.notify_all();
  if (executor_.joinable()) executor_.join();
  lane_->stop();
  p2p_->stop();
  watchdog_->stop();
  // Gloo objects go inside the scope, not after the destructor body.
  lane_.reset();
  p2p_.reset();
  coll_.reset();
  context_.reset();
}

Status GlooBackend::abortStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return abortStatus_;
}

bool GlooBackend::isAborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

void GlooBackend::executorLoop() {
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      running_ = task;
    }
    runTask(*task);
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_.reset();
    }
  }
}

void GlooBackend::finishTask(Task& task, const Status& st, bool p2pToo) {
  // Posted p2p ops are completed by GlooP2p (a collective member of the same batch failing does
  // not stop them); a single op's task Work is its member's Work; a batch's Work completes when
  // its members have.
  for (auto& m : task.members) {
    if (!isCollective(m.type) && !p2pToo) continue;
    m.work->complete(st);
  }
}

void GlooBackend::runTask(Task& task) {
  if (task.work->isCompleted()) return;  // failed by abort or the watchdog while queued
  {
    Status ab = abortStatus();
    if (!ab.isOk()) {
      finishTask(task, ab, /*p2pToo=*/true);  // nothing was posted
      return;
    }
  }
  flight_->recordStarted(task.seq);
  for (const auto& m : task.members) {
    if (m.seq != task.seq) flight_->recordStarted(m.seq);
  }
  const auto timeout = toMs(task.timeout + kGlooTimeoutSlack);
  const std::string what = std::string(opTypeName(task.batch ? OpType::kCoalesced : task.members[0].type)) +
                           " seq " + std::to_string(task.seq) + " on " + group_;
  Status st;
  bool fatal = false;
  try {
    if (task.batch) {
      st = runBatch(task, timeout);
    } else if (isCollective(task.members[0].type)) {
      st = runCollective(task.members[0], task.collSeq, timeout);
    } else {
      const Op& m = task.members[0];
      st = p2p_->post(P2pRequest{m.type == OpType::kSend, m.in, m.peer, m.tag, toMs(m.timeout + kGlooTimeoutSlack), m.work});
      fatal = !st.isOk();
    }
  } catch (const ::gloo::IoException& e) {
    st = unavailable(what + ": transport error: " + e.what());
    fatal = true;
  } catch (const std::exception& e) {
    st = internalError(what + ": gloo error: " + e.what());
    fatal = true;
  }
  if (fatal) {
    abortWith(st, [&] { finishTask(task, st, /*p2pToo=*/true); });
    return;
  }
  if (!st.isOk() && isAborted()) st = abortStatus();
  finishTask(task, st, /*p2pToo=*/false);
}

Status GlooBackend::awaitHeader(uint64_t collSeq, std::chrono::milliseconds timeout) {
  Status st = lane_->await(collSeq, Deadline::after(timeout), [this] { return isAborted(); });
  if (st.isOk() || st.code() == StatusCode::kInvalidArgument) return st;
  if (isAborted()) return abortStatus();
  // A transport failure or timeout in the exchange: the communicator is broken.
  throw ::gloo::IoException(st.message());
}

Status GlooBackend::runCollective(const Op& op, uint64_t collSeq, std::chrono::milliseconds timeout) {
  const std::string what = std::string(opTypeName(op.type)) + " seq " + std::to_string(op.seq) + " on " + group_;
  DDP_RETURN_IF_ERROR(awaitHeader(collSeq, timeout));
  const uint32_t tag = static_cast<uint32_t>(collSeq * 2);
  const uint32_t opTag = tag + 1;
  switch (op.type) {
    case OpType::kAllreduce: coll_->allreduce(op.in, op.reduce, opTag, timeout); break;
    case OpType::kBroadcast: coll_->broadcast(op.in, op.root, opTag, timeout); break;
    case OpType::kAllgather: coll_->allgather(op.in, op.out, opTag, timeout); break;
    case OpType::kReduceScatter: coll_->reduceScatter(op.in, op.out, op.reduce, opTag, timeout); break;
    case OpType::kGather: coll_->gather(op.in, op.out, op.root, opTag, timeout); break;
    case OpType::kBarrier: coll_->barrier(opTag, timeout); break;
    default: return internalError(what + ": not a collective");
  }
  return Status::ok();
}

Status GlooBackend::runBatch(Task& task, std::chrono::milliseconds timeout) {
  const std::string what = "coalesced batch seq " + std::to_string(task.seq) + " (" +
                           std::to_string(task.members.size()) + " ops) on " + group_;
  // P2p members first: posting never blocks, so every send and recv of the batch is in flight
  // before anything waits.
  for (auto& m : task.members) {
    if (isCollective(m.type)) continue;
    Status st = p2p_->post(P2pRequest{m.type == OpType::kSend, m.in, m.peer, m.tag, toMs(m.timeout + kGlooTimeoutSlack), m.work});
    if (!st.isOk()) throw ::gloo::IoException(st.message());
  }
  if (task.collSeq == 0) return Status::ok();
  DDP_RETURN_IF_ERROR(awaitHeader(task.collSeq, timeout));
  const uint32_t tag = static_cast<uint32_t>(task.collSeq * 2);
  uint32_t opTag = tag + 1;
  std::vector<bool> done(task.members.size(), false);
  for (size_t i = 0; i < task.members.size(); ++i) {
    const Op& m = task.members[i];
    if (done[i] || !isCollective(m.type)) continue;
    if (m.type == OpType::kAllreduce) {
      std::vector<BufferView> group;
      for (size_t j = i; j < task.members.size(); ++j) {
        const Op& o = task.members[j];
        if (!done[j] && o.type == OpType::kAllreduce && o.reduce == m.reduce && o.in.dtype == m.in.dtype) {
          group.push_back(o.in);
          done[j] = true;
        }
      }
      coll_->fusedAllreduce(group, m.reduce, opTag++, timeout);
      continue;
    }
    done[i] = true;
    switch (m.type) {
      case OpType::kBroadcast: coll_->broadcast(m.in, m.root, opTag++, timeout); break;
      case OpType::kAllgather: coll_->allgather(m.in, m.out, opTag++, timeout); break;
      case OpType::kReduceScatter: coll_->reduceScatter(m.in, m.out, m.reduce, opTag++, timeout); break;
      case OpType::kGather: coll_->gather(m.in, m.out, m.root, opTag++, timeout); break;
      case OpType::kBarrier: coll_->barrier(opTag++, timeout); break;
      default: break;
    }
  }
  return Status::ok();
}

void GlooBackend::signalTransport(const std::string& msg) {
  if (!context_) return;
  CommPriorityScope scope(options_.commThreadPriority);  // takes Gloo's pair locks (see create())
  // Called once per backend (abortWith returns early once aborted_ is set), so this logs once.
  if (!signalGlooTransport(*context_, msg)) {
    DDP_LOG(Error) << group_ << ": abort could not signal the Gloo transport (not Gloo's TCP context, or its "
                   << "layout changed; see gloo_abort_self_test.h); connections were closed, but abort cannot "
                   << "wake local waits: ops blocked in Gloo stay blocked until their own timeout";
  }
}

void GlooBackend::abort(const Status& reason) { abortWith(reason, nullptr); }

void GlooBackend::abortWith(const Status& reason, const std::function<void()>& failCulprit) {
  std::vector<std::shared_ptr<CompletionWork>> pending;
  Status st;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) {
      if (failCulprit) failCulprit();
      return;
    }
    aborted_ = true;
    abortStatus_ = abortedError("communicator " + group_ + " aborted: " + reason.toString());
    st = abortStatus_;
    queue_.clear();
    held_.clear();
    coalescing_ = false;
  }
  cv_.notify_all();
  // The op that caused the abort keeps its own status (Timeout, transport error); it is
  // completed after the flag is set so its waiters already see isAborted().
  if (failCulprit) failCulprit();
  {
    std::lock_guard<std::mutex> lock(live_->mu);
    for (auto& [seq, weak] : live_->works) {
      if (auto w = weak.lock()) pending.push_back(std::move(w));
    }
  }
  std::sort(pending.begin(), pending.end(), [](const auto& a, const auto& b) { return a->seq() < b->seq(); });
  for (auto& w : pending) w->complete(st);
  signalTransport("communicator aborted: " + reason.message());
  waits_->abort();  // after the transport: no socket touches a buffer whose wait it releases
  if (options_.logAbort) DDP_LOG(Warning) << st.message() << "\n" << flight_->dump(group_);
}

void GlooBackend::onWatchdogTimeout(const WatchedOp& op, const Status& st) {
  std::shared_ptr<CompletionWork> work;
  {
    std::lock_guard<std::mutex> lock(live_->mu);
    auto it = live_->works.find(op.seq);
    if (it != live_->works.end()) work = it->second.lock();
  }
  if (!work || work->isCompleted()) return;
  flight_->recordEnded(op.seq, FlightState::kTimedOut, st.message());
  DDP_LOG(Error) << st.message() << "\n" << flight_->dump(group_);
  abortWith(st, [&] { work->complete(st); });
}

}  // namespace ddp::comm