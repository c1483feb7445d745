#pragma once
// FunctionHook<State>: a CommHook from a callable (State&, GradBucket&) -> Result<HookResult>,
// for users who bring their own reduction and state, as PyTorch's register_comm_hook(state, fn)
// does. The hook owns the state; state() reaches it between steps.
//
//   struct Counter { comm::Backend* backend; int calls = 0; };
//   reducer->registerCommHook(makeFunctionHook("counting_allreduce", Counter{&backend},
//       [](Counter& s, GradBucket& b) -> Result<HookResult> {
//         ++s.calls;
//         (void)kernels::scaleInPlace(..., 1.0 / s.backend->size());
//         return HookResult{s.backend->allreduce(b.buffer(), comm::ReduceOp::kSum), {}};
//       }));
//
// Thread model: as every CommHook (worker/ddp/comm_hook.h): run() on the reducer's comm thread.
// state() must not be used while a step is in flight.

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "worker/ddp/comm_hook.h"

namespace ddp {

template <typename State>
class FunctionHook final : public CommHook {
 public:
  using Fn = std::function<Result<HookResult>(State&, GradBucket&)>;
  FunctionHook(std::string name, State state, Fn fn)
      : name_(std::move(name)), state_(std::move(state)), fn_(std::move(fn)) {}

  std::string name() const override { return name_; }
  Result<HookResult> run(GradBucket& bucket) override { return fn_(state_, bucket); }
  State& state() { return state_; }

 private:
  std::string name_;
  State state_;
  Fn fn_;
};

template <typename State, typename F>
std::unique_ptr<FunctionHook<State>> makeFunctionHook(std::string name, State state, F fn) {
  return std::make_unique<FunctionHook<State>>(std::move(name), std::move(state),
                                               typename FunctionHook<State>::Fn(std::move(fn)));
}

}  // namespace ddp
