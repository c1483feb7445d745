#pragma once
// OpArgs: the arguments of one Backend call (backend.h) as every implementation receives them,
// built by one named constructor per call, and validateOpArgs: the checks every backend makes
// before it issues an op (each buffer has data and a known dtype; the root and the peer are
// ranks of the group; the element counts and dtypes of the two-buffer ops agree with the world
// size). A backend adds only its own rule for a buffer (the device it runs on, the dtypes it
// carries) as a BufferRule. GlooBackend, NcclBackend and the tests' LocalBackend build their ops
// from it, so the three validate alike and a new check is written once.
// Thread model: plain values and pure functions.

#include <functional>
#include <string>

#include "common/status.h"
#include "worker/comm/types.h"

namespace ddp::comm {

struct OpArgs {
  OpType type = OpType::kBarrier;
  BufferView in;   // the buffer of single-buffer ops; the input of allgather, reduce-scatter, gather
  BufferView out;  // the output of allgather, reduce-scatter, gather (gather: the root's only)
  ReduceOp reduce = ReduceOp::kSum;  // allreduce, reduce-scatter
  int root = -1;                     // broadcast, gather
  int peer = -1;                     // send: the destination; recv: the source
  int tag = 0;                       // send, recv

  static OpArgs allreduce(BufferView buf, ReduceOp op);
  static OpArgs broadcast(BufferView buf, int root);
  static OpArgs allgather(BufferView in, BufferView out);
  static OpArgs reduceScatter(BufferView in, BufferView out, ReduceOp op);
  static OpArgs gather(BufferView in, BufferView out, int root);
  static OpArgs barrier();
  static OpArgs send(BufferView buf, int dst, int tag);
  static OpArgs recv(BufferView buf, int src, int tag);
};

// A backend's own rule for one buffer: "" when it may carry it, else why not, as the end of a
// sentence whose subject is the buffer ("is on cpu; nccl needs cuda:0").
using BufferRule = std::function<std::string(const BufferView& buffer)>;

// Ok, or InvalidArgument "<context>: <op> <what is wrong>" (context names the backend and its
// group). `rank` and `size` are the caller's place in the group.
Status validateOpArgs(const OpArgs& args, int rank, int size, const std::string& context, const BufferRule& rule);

}  // namespace ddp::comm
