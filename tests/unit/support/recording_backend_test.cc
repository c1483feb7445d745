// RecordingBackend over LocalBackend: the log matches what was issued, times are ordered, and
// the fault rules (a fake for faults: delays, injected errors, dropped ops) behave as documented.
#include "tests/support/recording_backend.h"

#include <gtest/gtest.h>

#include "tests/support/local_backend.h"

namespace ddp::comm {
namespace {

TEST(RecordingBackendTest, LogsEveryOpWithTimes) {
  runLocalRanks(2, [&](int rank, Backend& inner) {
    RecordingBackend rec(inner);
    EXPECT_EQ(rec.rank(), rank);
    EXPECT_EQ(rec.size(), 2);
    std::vector<float> a(10, 1.f), out(20);
    ASSERT_TRUE(rec.allreduce(viewOf(a.data(), 10), ReduceOp::kSum)->wait().isOk());
    ASSERT_TRUE(rec.broadcast(viewOf(a.data(), 10), 1)->wait().isOk());
    ASSERT_TRUE(rec.allgather(viewOf(a.data(), 10), viewOf(out.data(), 20))->wait().isOk());
    ASSERT_TRUE(rec.barrier()->wait().isOk());
    int64_t v = rank;
    if (rank == 0) {
      ASSERT_TRUE(rec.send(viewOf(&v, 1), 1, 3)->wait().isOk());
    } else {
      ASSERT_TRUE(rec.recv(viewOf(&v, 1), 0, 3)->wait().isOk());
      EXPECT_EQ(v, 0);
    }
    for (float x : a) EXPECT_EQ(x, 2.f);
    auto log = rec.ops();
    ASSERT_EQ(log.size(), 5u);
    const OpType types[] = {OpType::kAllreduce, OpType::kBroadcast, OpType::kAllgather,
                            OpType::kBarrier, rank == 0 ? OpType::kSend : OpType::kRecv};
    for (size_t i = 0; i < log.size(); ++i) {
      EXPECT_EQ(log[i].type, types[i]);
      EXPECT_EQ(log[i].seq, i + 1);  // LocalBackend numbers ops 1, 2, ...
      ASSERT_TRUE(log[i].completed.has_value());
      EXPECT_LE(log[i].issued, *log[i].completed);
      EXPECT_TRUE(log[i].status.isOk());
      if (i > 0) EXPECT_LE(log[i - 1].issued, log[i].issued);
    }
    EXPECT_EQ(log[0].bytes, 40u);
    EXPECT_EQ(log[1].peer, 1);
    EXPECT_EQ(log[4].peer, 1 - rank);
    rec.clear();
    EXPECT_TRUE(rec.ops().empty());
  });
}

TEST(RecordingBackendTest, CompletionTimeReflectsTheSlowestRank) {
  runLocalRanks(2, [&](int rank, Backend& inner) {
    RecordingBackend rec(inner);
    float v = 1.f;
    if (rank == 1) std::this_thread::sleep_for(50ms);
    ASSERT_TRUE(rec.allreduce(viewOf(&v, 1), ReduceOp::kSum)->wait().isOk());
    auto log = rec.ops();
    ASSERT_EQ(log.size(), 1u);
    if (rank == 0) EXPECT_GE(*log[0].completed - log[0].issued, 40ms);
  });
}

TEST(RecordingBackendTest, FaultDelayAndInjectedError) {
  runLocalRanks(2, [&](int rank, Backend& inner) {
    RecordingBackend rec(inner);
    if (rank == 0) {
      rec.addFault({.type = OpType::kAllreduce, .nth = 2, .delay = 60ms});
      rec.addFault({.type = OpType::kBroadcast, .status = internalError("injected link failure")});
    }
    float v = 1.f;
    ASSERT_TRUE(rec.allreduce(viewOf(&v, 1), ReduceOp::kSum)->wait().isOk());
    auto start = SystemClock::instance().now();
    ASSERT_TRUE(rec.allreduce(viewOf(&v, 1), ReduceOp::kSum)->wait().isOk());
    auto took = SystemClock::instance().now() - start;
    EXPECT_EQ(v, 4.f);
    if (rank == 0) EXPECT_GE(took, 55ms);
    Status st = rec.broadcast(viewOf(&v, 1), 0)->wait();
    if (rank == 0) {
      EXPECT_EQ(st.code(), StatusCode::kInternal);
      EXPECT_EQ(st.message(), "injected link failure");
      auto log = rec.ops();
      EXPECT_FALSE(log[0].faulted);
      EXPECT_TRUE(log[1].faulted);
      EXPECT_EQ(log[2].status, st);
    } else {
      EXPECT_TRUE(st.isOk());  // the op really ran
    }
  });
}

TEST(RecordingBackendTest, DroppedOpHangsUntilAbort) {
  runLocalRanks(2, [&](int rank, Backend& inner) {
    RecordingBackend rec(inner);
    if (rank == 1) rec.addFault({.type = OpType::kBarrier, .drop = true});
    auto w = rec.barrier();
    if (rank == 1) {
      EXPECT_EQ(w->wait(Deadline::after(30ms)).code(), StatusCode::kTimeout);
      rec.abort(abortedError("hang detected"));
      Status st = w->wait(Deadline::after(5s));
      EXPECT_EQ(st.code(), StatusCode::kAborted);
      EXPECT_EQ(rec.ops()[0].status, st);
    } else {
      // The peer's barrier is released by rank 1's abort.
      EXPECT_EQ(w->wait(Deadline::after(5s)).code(), StatusCode::kAborted);
    }
  });
}

TEST(RecordingBackendTest, MarksCoalescedOps) {
  runLocalRanks(2, [&](int, Backend& inner) {
    RecordingBackend rec(inner);
    std::vector<float> a(4, 1.f), b(2, 1.f);
    ASSERT_TRUE(rec.startCoalescing().isOk());
    (void)rec.allreduce(viewOf(a.data(), 4), ReduceOp::kSum);
    (void)rec.allreduce(viewOf(b.data(), 2), ReduceOp::kSum);
    ASSERT_TRUE(rec.endCoalescing()->wait().isOk());
    auto log = rec.ops();
    ASSERT_EQ(log.size(), 3u);
    EXPECT_TRUE(log[0].inCoalescing && log[1].inCoalescing);
    EXPECT_EQ(log[2].type, OpType::kCoalesced);
    EXPECT_FALSE(log[2].inCoalescing);
    EXPECT_EQ(log[2].bytes, 24u);
    EXPECT_EQ(a[0], 2.f);
  });
}

// A Work that offers no completion callbacks, to exercise the polling path.
class OpaqueWork final : public Work {
 public:
  explicit OpaqueWork(WorkPtr inner) : inner_(std::move(inner)) {}
  Status wait(Deadline d) override { return inner_->wait(d); }
  Status wait() override { return inner_->wait(); }
  bool isCompleted() const override { return inner_->isCompleted(); }
  Status status() const override { return inner_->status(); }
  uint64_t seq() const override { return inner_->seq(); }
  OpType opType() const override { return inner_->opType(); }
  size_t bytes() const override { return inner_->bytes(); }

 private:
  WorkPtr inner_;
};

// Forwards to another backend, but hides allreduce's Work behind OpaqueWork.
class OpaqueBackend final : public Backend {
 public:
  explicit OpaqueBackend(Backend& b) : b_(b) {}
  int rank() const override { return b_.rank(); }
  int size() const override { return b_.size(); }
  std::string name() const override { return "opaque"; }
  bool supportsDevice(DeviceType t) const override { return b_.supportsDevice(t); }
  WorkPtr allreduce(BufferView buf, ReduceOp op, const OpOptions& o) override {
    return std::make_shared<OpaqueWork>(b_.allreduce(buf, op, o));
  }
  WorkPtr broadcast(BufferView buf, int root, const OpOptions& o) override { return b_.broadcast(buf, root, o); }
  WorkPtr allgather(BufferView i, BufferView out, const OpOptions& o) override { return b_.allgather(i, out, o); }
  WorkPtr reduceScatter(BufferView i, BufferView out, ReduceOp op, const OpOptions& o) override {
    return b_.reduceScatter(i, out, op, o);
  }
  WorkPtr gather(BufferView i, BufferView out, int root, const OpOptions& o) override {
    return b_.gather(i, out, root, o);
  }
  WorkPtr barrier(const OpOptions& o) override { return b_.barrier(o); }
  WorkPtr send(BufferView buf, int d, int t, const OpOptions& o) override { return b_.send(buf, d, t, o); }
  WorkPtr recv(BufferView buf, int s, int t, const OpOptions& o) override { return b_.recv(buf, s, t, o); }
  Status startCoalescing() override { return b_.startCoalescing(); }
  WorkPtr endCoalescing() override { return b_.endCoalescing(); }
  void abort(const Status& r) override { b_.abort(r); }
  bool isAborted() const override { return b_.isAborted(); }
  Duration defaultTimeout() const override { return b_.defaultTimeout(); }

 private:
  Backend& b_;
};

TEST(RecordingBackendTest, PollsWorksWithoutCallbacks) {
  runLocalRanks(2, [&](int rank, Backend& inner) {
    RecordingBackend rec(std::make_unique<OpaqueBackend>(inner));
    float v = float(rank);
    if (rank == 1) std::this_thread::sleep_for(20ms);
    WorkPtr w = rec.allreduce(viewOf(&v, 1), ReduceOp::kSum);
    ASSERT_TRUE(w->wait(Deadline::after(5s)).isOk());
    EXPECT_EQ(v, 1.f);
    auto log = rec.ops();
    ASSERT_TRUE(log[0].completed.has_value());
    EXPECT_EQ(log[0].seq, 1u);
  });
}

}  // namespace
}  // namespace ddp::comm
