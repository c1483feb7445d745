#include "worker/comm/op_args.h"

namespace ddp::comm {

OpArgs OpArgs::allreduce(BufferView buf, ReduceOp op) {
  OpArgs a;
  a.type = OpType::kAllreduce;
  a.in = buf;
  a.reduce = op;
  return a;
}

OpArgs OpArgs::broadcast(BufferView buf, int root) {
  OpArgs a;
  a.type = OpType::kBroadcast;
  a.in = buf;
  a.root = root;
  return a;
}

OpArgs OpArgs::allgather(BufferView in, BufferView out) {
  OpArgs a;
  a.type = OpType::kAllgather;
  a.in = in;
  a.out = out;
  return a;
}

OpArgs OpArgs::reduceScatter(BufferView in, BufferView out, ReduceOp op) {
  OpArgs a = allgather(in, out);
  a.type = OpType::kReduceScatter;
  a.reduce = op;
  return a;
}

OpArgs OpArgs::gather(BufferView in, BufferView out, int root) {
  OpArgs a = allgather(in, out);
  a.type = OpType::kGather;
  a.root = root;
  return a;
}

OpArgs OpArgs::barrier() { return OpArgs{}; }

OpArgs OpArgs::send(BufferView buf, int dst, int tag) {
  OpArgs a;
  a.type = OpType::kSend;
  a.in = buf;
  a.peer = dst;
  a.tag = tag;
  return a;
}

OpArgs OpArgs::recv(BufferView buf, int src, int tag) {
  OpArgs a = send(buf, src, tag);
  a.type = OpType::kRecv;
  return a;
}

namespace {

std::string elements(size_t count, DType dtype) { return std::to_string(count) + " " + dtypeName(dtype); }

// The checks of the two-buffer ops: the same dtype, and the large side world size x the small.
std::string shapeProblem(const OpArgs& a, int size) {
  if (a.in.dtype != a.out.dtype) {
    return std::string("input is ") + dtypeName(a.in.dtype) + " but output is " + dtypeName(a.out.dtype);
  }
  const bool scatter = a.type == OpType::kReduceScatter;
  const BufferView& big = scatter ? a.in : a.out;
  const BufferView& small = scatter ? a.out : a.in;
  if (big.count == small.count * static_cast<size_t>(size)) return "";
  return std::string(scatter ? "input" : "output") + " must hold world size (" + std::to_string(size) + ") x " +
         std::to_string(small.count) + " elements (" + (scatter ? "output" : "input") + " x world), got " +
         elements(big.count, big.dtype);
}

std::string bufferProblem(const BufferView& b, const BufferRule& rule) {
  std::string why = rule(b);
  if (!why.empty()) return why;
  if (b.count > 0 && b.data == nullptr) return "has no data but " + std::to_string(b.count) + " elements";
  if (dtypeSize(b.dtype) == 0) return "has an unknown dtype";
  return "";
}

std::string rankProblem(const OpArgs& a, int rank, int size) {
  const bool p2p = a.type == OpType::kSend || a.type == OpType::kRecv;
  const int r = p2p ? a.peer : a.root;
  const std::string range = "[0, " + std::to_string(size) + ")";
  if (!p2p) return r >= 0 && r < size ? "" : "root " + std::to_string(r) + " out of range " + range;
  if (r < 0 || r >= size || r == rank) {
    return std::string(a.type == OpType::kSend ? "destination " : "source ") + std::to_string(r) +
           " must be another rank in " + range + " (this is rank " + std::to_string(rank) + ")";
  }
  return a.tag >= 0 ? "" : "tag must be >= 0, got " + std::to_string(a.tag);
}

std::string problem(const OpArgs& a, int rank, int size, const BufferRule& rule) {
  auto buffer = [&](const BufferView& b, const char* role) {
    const std::string why = bufferProblem(b, rule);
    return why.empty() ? why : std::string(role) + " " + why;
  };
  std::string why;
  switch (a.type) {
    case OpType::kAllreduce:
      return buffer(a.in, "buffer");
    case OpType::kBroadcast:
    case OpType::kSend:
    case OpType::kRecv:
      why = buffer(a.in, "buffer");
      return why.empty() ? rankProblem(a, rank, size) : why;
    case OpType::kGather:
      why = buffer(a.in, "input");
      if (why.empty()) why = rankProblem(a, rank, size);
      if (!why.empty() || a.root != rank) return why;  // the output matters on the root only
      why = buffer(a.out, "output");
      return why.empty() ? shapeProblem(a, size) : why;
    case OpType::kAllgather:
    case OpType::kReduceScatter:
      why = buffer(a.in, "input");
      if (why.empty()) why = buffer(a.out, "output");
      return why.empty() ? shapeProblem(a, size) : why;
    case OpType::kBarrier:
    case OpType::kCoalesced:
      return "";
  }
  return "unknown op";
}

}  // namespace

Status validateOpArgs(const OpArgs& args, int rank, int size, const std::string& context, const BufferRule& rule) {
  const std::string why = problem(args, rank, size, rule);
  if (why.empty()) return Status::ok();
  return invalidArgument(context + ": " + opTypeName(args.type) + " " + why);
}

}  // namespace ddp::comm
