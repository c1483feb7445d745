#pragma once
// Rendezvous: the membership state machine of one job (pure: no threads, no I/O, no clock of
// its own; every call takes `now`). The controller owns one per job, calls it under the job's
// lock and carries out what it decides (wakes waiting workers, starts launchers).
//
// Note [Rendezvous rounds]
//  - A round is open until it closes; workers join it (register). It closes when
//    `maxWorkers` joined, or when `minWorkers` joined and `lastCall` has passed since the
//    min-th join (TorchElastic's last call). If membership drops below min before that, the
//    last call is cancelled and starts again when min is reached again.
//  - Closing assigns ranks in a stable order: survivors of the previous generation (members
//    of the last closed round that rejoined) first, keeping their relative rank order, then
//    newcomers in join order. At most maxWorkers are taken; the rest wait for the next round.
//    The closed round is the job's generation (1, 2, ...): its members hold the ranks.
//  - A pod of several ranks (Note [Several ranks per pod] in worker/control/pod_supervisor.h)
//    holds adjacent ranks: with `podOf` set, closing gathers each pod's members at the place of
//    its first member in the order above, in natural id order (keepPodsAdjacent).
//  - A worker that registers while a generation is active and is not one of its members is a
//    late joiner: it waits for the next round (which the controller opens by ending the
//    generation, e.g. after a failure, or for elasticity). A member that registers again is
//    told its assignment again (idempotent).
//  - A planned membership change (Note [Elastic membership] in controller/jobs/membership/membership.h)
//    says which workers it expects (expect()): the round closes as soon as all of them joined
//    instead of waiting out the last call; those that do not come are waited for as above.
//  - Fencing: only the active generation is current; requests naming any other generation are
//    stale (the controller answers 410 Gone).
// Thread model: not thread-safe; the owner serialises calls.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::controller {

// The pod a worker runs in (Note [Several ranks per pod]); nullopt: a pod of its own.
using PodOfWorker = std::function<std::optional<int>(const std::string& workerId)>;

struct RendezvousConfig {
  int minWorkers = 1;
  int maxWorkers = 1;
  Duration lastCall = std::chrono::seconds(30);
  PodOfWorker podOf;  // empty: one rank per pod
  Status validate() const;  // 1 <= min <= max, lastCall >= 0
};

// A closed round: the generation and its members, index = rank.
struct RendezvousRound {
  int64_t generation = 0;
  std::vector<std::string> members;
  TimePoint closedAt{};
  TimePoint openedAt{};  // the round's first join (ddp_rendezvous_seconds: closedAt - openedAt)
  int worldSize() const { return static_cast<int>(members.size()); }
  // O(1) once indexed (Rendezvous indexes every round it closes or restores).
  std::optional<int> rankOf(const std::string& workerId) const;
  void index();

 private:
  std::unordered_map<std::string, int> rankById_;
};

// `order` with each pod's members (podOf) gathered at the place of the pod's first member, in
// natural id order ("job-w2" < "job-w10"); workers without a pod keep their place. Pure.
std::vector<std::string> keepPodsAdjacent(const std::vector<std::string>& order, const PodOfWorker& podOf);

class Rendezvous {
 public:
  // `lastGeneration`: the highest generation already used (a restarted controller continues
  // numbering after it).
  explicit Rendezvous(RendezvousConfig config, int64_t lastGeneration = 0);

  // Restores an active generation (a controller restarted mid-job re-adopts its workers).
  static Rendezvous restored(RendezvousConfig config, RendezvousRound active);

  // Registers `workerId`. Closes the round when this join reaches maxWorkers.
  // Returns the generation the worker belongs to or will join (the active one for a member).
  int64_t join(const std::string& workerId, TimePoint now);
  // A worker that has not been assigned yet is gone (its process exited): it leaves the open
  // round (or the late joiners). May close the round (every other expected worker joined): the
  // caller checks active() afterwards.
  void leave(const std::string& workerId, TimePoint now);
  // The workers a planned membership change expects in the open round (Note [Elastic
  // membership]): the round also closes as soon as every one of them joined, if that is at
  // least minWorkers; one that leaves is no longer expected. Cleared when the round closes.
  // Closes the round at once when they all joined already. While one of them is missing, the
  // last call does not close the round before `now + wait` (a survivor of a planned change may be
  // slow to tear down on a busy machine; left out, it would wait for yet another change).
  // `closeWhenAllJoined` false (a recovery after a verdict, Note [Recovery]): every one of them
  // joining does not close the round early (a replacement may still come within the last call);
  // only the wait beyond the last call for missing ones applies.
  void expect(std::vector<std::string> ids, TimePoint now, Duration wait = Duration::zero(),
              bool closeWhenAllJoined = true);
  // Closes the open round if its last call has passed at `now`. True when it closed.
  bool tick(TimePoint now);
  // When tick() should be called next to close the round on time; nullopt when nothing is due.
  std::optional<TimePoint> nextDeadline() const;

  // Ends the active generation: its members become the survivors whose rank order the next
  // round keeps (if they rejoin); late joiners move into the new open round.
  void endGeneration(TimePoint now);

  bool open() const { return !active_.has_value(); }
  const std::optional<RendezvousRound>& active() const { return active_; }
  // The active generation, or 0 when none is active.
  int64_t generation() const { return active_ ? active_->generation : 0; }
  // The generation the open round will get when it closes.
  int64_t nextGeneration() const { return lastGeneration_ + 1; }
  bool isCurrent(int64_t generation) const { return active_ && active_->generation == generation; }
  const std::vector<std::string>& waiting() const { return waiting_; }
  const std::vector<std::string>& lateJoiners() const { return late_; }
  const RendezvousConfig& config() const { return config_; }

 private:
  void close(TimePoint now);
  void noteCount(TimePoint now);
  // Closes the open round when max joined, or every expected worker (and at least min).
  void closeIfComplete(TimePoint now);

  RendezvousConfig config_;
  int64_t lastGeneration_ = 0;
  std::optional<RendezvousRound> active_;
  std::vector<std::string> previous_;   // members of the last ended generation, by rank
  std::vector<std::string> waiting_;    // the open round's joiners, in join order
  std::vector<std::string> late_;       // joined while a generation was active
  std::vector<std::string> expected_;   // expect(): the open round closes once all joined
  std::optional<TimePoint> expectUntil_;  // expect(): the last call waits for them until then
  bool expectCloses_ = true;              // expect(): all of them joined closes the round
  std::optional<TimePoint> minReachedAt_;
  std::optional<TimePoint> openedAt_;   // the open round's first join
};

}  // namespace ddp::controller
