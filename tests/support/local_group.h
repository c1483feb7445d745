#pragma once
// LocalGroup: the state shared by the LocalBackend ranks of one in-process group: it matches
// the ranks' ops (Note [LocalGroup matching] in local_group.cc), runs them on shared memory and
// fails them on deadlines, bad arguments and aborts. Users normally only create it
// (makeLocalGroup) and hand it to LocalBackend; see local_backend.h for the semantics.
//
// Thread model: starts one executor thread (joined by the destructor) that runs matched ops in
// match order and completes their Works (Work callbacks run on it), and fails ops whose
// deadline passed. All methods are thread-safe; state is guarded by State::mu_.

#include <memory>
#include <string>
#include <vector>

#include "worker/comm/op_args.h"
#include "worker/comm/types.h"
#include "worker/comm/work.h"

namespace ddp::comm {

struct LocalGroupOptions {
  // Default op timeout (shorter than the interface's 10 minutes: a hung test should fail fast).
  Duration timeout = std::chrono::seconds(60);
  std::string name = "local";
  std::vector<DeviceType> devices = {DeviceType::kCpu};
  // Deadlines are measured on this clock (must outlive the group). Tests inject a FakeClock to
  // make ops time out without waiting; the executor then re-checks every 2 ms of real time.
  const Clock* clock = &SystemClock::instance();
};

// One op of one rank as the group sees it.
struct LocalOp : OpArgs {  // the call's arguments (op_args.h) and its place in the group
  int rank = 0;
  uint64_t collSeq = 0;  // collective issue number (0 for send/recv)
  TimePoint deadline;
  Duration timeout{};
  Status error;          // set when this rank's own arguments were bad
  std::shared_ptr<CompletionWork> work;
};

class LocalGroup {
 public:
  LocalGroup(int world, LocalGroupOptions options);
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;

  int world() const;
  const LocalGroupOptions& options() const;
  // Registers one rank's op; completes its Work (now or later) with the op's outcome.
  void submit(LocalOp op);
  // Fails pending ops that need `rank` (its own with `reason`, peers' with a message naming it)
  // and makes future ones fail fast. Returns once no op of the group is being executed.
  void abortRank(int rank, const Status& reason);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// Creates the shared state of `world` ranks.
std::shared_ptr<LocalGroup> makeLocalGroup(int world, LocalGroupOptions options = {});

}  // namespace ddp::comm
