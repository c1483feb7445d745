// OpArgs and validateOpArgs (worker/comm/op_args.h): each named constructor fills the fields its
// call has; the shared checks accept every well-formed call (world sizes 1 to 4, counts 0, 1 and
// odd) and refuse each malformed one with InvalidArgument naming the context, the op and what is
// wrong; a backend's own buffer rule is asked first.
#include "worker/comm/op_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ddp::comm {
namespace {

std::vector<float> a(16), b(64);
const BufferRule kAnyBuffer = [](const BufferView&) { return std::string(); };

BufferView view(std::vector<float>& v, size_t n, DType dtype = DType::kF32) { return {v.data(), n, dtype, Device::cpu()}; }

// The message of a refusal ("" when the arguments are accepted).
std::string refusal(const OpArgs& args, int rank, int size, const BufferRule& rule = kAnyBuffer) {
  Status st = validateOpArgs(args, rank, size, "grp", rule);
  if (st.isOk()) return "";
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
  return st.message();
}

TEST(OpArgsTest, NamedConstructorsFillTheirCallsFields) {
  const BufferView in = view(a, 3), out = view(b, 6);
  OpArgs r = OpArgs::reduceScatter(out, in, ReduceOp::kMax);
  EXPECT_EQ(r.type, OpType::kReduceScatter);
  EXPECT_EQ(r.in.data, out.data);
  EXPECT_EQ(r.out.count, 3u);
  EXPECT_EQ(r.reduce, ReduceOp::kMax);
  OpArgs g = OpArgs::gather(in, out, 1);
  EXPECT_EQ(g.type, OpType::kGather);
  EXPECT_EQ(g.root, 1);
  EXPECT_EQ(OpArgs::broadcast(in, 2).root, 2);
  EXPECT_EQ(OpArgs::allreduce(in, ReduceOp::kAvg).reduce, ReduceOp::kAvg);
  OpArgs s = OpArgs::send(in, 3, 7);
  EXPECT_EQ(s.type, OpType::kSend);
  EXPECT_EQ(s.peer, 3);
  EXPECT_EQ(s.tag, 7);
  OpArgs v = OpArgs::recv(in, 0, 9);
  EXPECT_EQ(v.type, OpType::kRecv);
  EXPECT_EQ(v.peer, 0);
  EXPECT_EQ(v.tag, 9);
  EXPECT_EQ(OpArgs::barrier().type, OpType::kBarrier);
}

TEST(OpArgsTest, AcceptsWellFormedCallsAtEveryWorldSize) {
  for (int world = 1; world <= 4; ++world) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{3}}) {
      const int last = world - 1;
      EXPECT_EQ(refusal(OpArgs::allreduce(view(a, n), ReduceOp::kSum), 0, world), "");
      EXPECT_EQ(refusal(OpArgs::broadcast(view(a, n), last), 0, world), "");
      EXPECT_EQ(refusal(OpArgs::allgather(view(a, n), view(b, n * world)), last, world), "");
      EXPECT_EQ(refusal(OpArgs::reduceScatter(view(b, n * world), view(a, n), ReduceOp::kSum), 0, world), "");
      EXPECT_EQ(refusal(OpArgs::gather(view(a, n), view(b, n * world), 0), 0, world), "");
      EXPECT_EQ(refusal(OpArgs::barrier(), 0, world), "");
      if (world > 1) {
        EXPECT_EQ(refusal(OpArgs::send(view(a, n), 1, 0), 0, world), "");
        EXPECT_EQ(refusal(OpArgs::recv(view(a, n), 0, 5), last, world), "");
      }
    }
  }
  // An empty view may have no data.
  EXPECT_EQ(refusal(OpArgs::allreduce(BufferView{nullptr, 0, DType::kF32, Device::cpu()}, ReduceOp::kSum), 0, 2), "");
}

TEST(OpArgsTest, RefusesBadBuffers) {
  EXPECT_EQ(refusal(OpArgs::allreduce(BufferView{nullptr, 4, DType::kF32, Device::cpu()}, ReduceOp::kSum), 0, 2),
            "grp: allreduce buffer has no data but 4 elements");
  EXPECT_EQ(refusal(OpArgs::allgather(view(a, 2), BufferView{nullptr, 4, DType::kF32, Device::cpu()}), 0, 2),
            "grp: allgather output has no data but 4 elements");
  EXPECT_EQ(refusal(OpArgs::allgather(view(a, 2), view(b, 4, DType::kF16)), 0, 2),
            "grp: allgather input is f32 but output is f16");
  // The backend's rule is asked first, and its reason completes the sentence.
  const BufferRule cpuOnly = [](const BufferView& v) {
    return v.device.isCpu() ? std::string() : "is on " + v.device.toString() + "; this backend needs CPU buffers";
  };
  EXPECT_EQ(refusal(OpArgs::broadcast(BufferView{nullptr, 4, DType::kF32, Device::cuda(0)}, 0), 0, 2, cpuOnly),
            "grp: broadcast buffer is on cuda:0; this backend needs CPU buffers");
}

TEST(OpArgsTest, RefusesCountsThatDisagreeWithTheWorldSize) {
  EXPECT_EQ(refusal(OpArgs::allgather(view(a, 3), view(b, 8)), 0, 3),
            "grp: allgather output must hold world size (3) x 3 elements (input x world), got 8 f32");
  EXPECT_EQ(refusal(OpArgs::reduceScatter(view(b, 7), view(a, 2), ReduceOp::kSum), 1, 4),
            "grp: reduce_scatter input must hold world size (4) x 2 elements (output x world), got 7 f32");
  EXPECT_EQ(refusal(OpArgs::gather(view(a, 3), view(b, 5), 0), 0, 2),
            "grp: gather output must hold world size (2) x 3 elements (input x world), got 5 f32");
  // Off the root a gather's output is not used, so it is not checked.
  EXPECT_EQ(refusal(OpArgs::gather(view(a, 3), BufferView{}, 0), 1, 2), "");
}

TEST(OpArgsTest, RefusesRanksOutsideTheGroup) {
  EXPECT_EQ(refusal(OpArgs::broadcast(view(a, 1), 2), 0, 2), "grp: broadcast root 2 out of range [0, 2)");
  EXPECT_EQ(refusal(OpArgs::gather(view(a, 1), view(b, 2), -1), 0, 2), "grp: gather root -1 out of range [0, 2)");
  EXPECT_EQ(refusal(OpArgs::send(view(a, 1), 1, 0), 1, 2),
            "grp: send destination 1 must be another rank in [0, 2) (this is rank 1)");
  EXPECT_EQ(refusal(OpArgs::recv(view(a, 1), 3, 0), 0, 3),
            "grp: recv source 3 must be another rank in [0, 3) (this is rank 0)");
  EXPECT_EQ(refusal(OpArgs::send(view(a, 1), 1, -1), 0, 2), "grp: send tag must be >= 0, got -1");
}

}  // namespace
}  // namespace ddp::comm
