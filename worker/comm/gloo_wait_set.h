#pragma once
// GlooWaitSet: the unbound buffers a communicator's threads may be waiting on, so that abort can
// release every one of those waits.
//
// Note [Abortable waits]
// Aborting a Gloo communicator signals its TCP transport (Note [Reaching the transport context]):
// every pair gets an exception and closes, which wakes the waits of pending recvs and of sends
// still waiting for the peer's "ready". It does not wake a send that was already being written
// (an op in a pair's transmit queue: Gloo signals only bound buffers there), so a rank aborted in
// the middle of a large send stayed in `waitSend` until its own timeout (collectiveSeconds), and
// its teardown (the backend's destructor joins the thread) with it: a survivor of a membership
// change rejoined seconds late and was left out of the next generation. Every collective, p2p
// transfer and op-header exchange (Note [Header lane]) of GlooBackend therefore runs over
// unbound buffers created here (GlooCollectives implements the algorithms itself, Note [Ring
// collectives]); abort() calls abortWaitSend and abortWaitRecv on each, so its current or next
// wait returns false, which the caller turns into an exception; buffers created after abort()
// throw at once. The transport is signalled first, so no socket reads or writes a buffer after
// its wait was released.
// Thread model: thread-safe. create() and buffer destruction on the communicator's threads,
// abort() from any thread (the watchdog, the worker's abort path).

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}
}  // namespace gloo

namespace ddp::comm {

class GlooWaitSet {
 public:
  struct Unregister {
    GlooWaitSet* set = nullptr;
    void operator()(::gloo::transport::UnboundBuffer* b) const;
  };
  using Buffer = std::unique_ptr<::gloo::transport::UnboundBuffer, Unregister>;

  // An unbound buffer over [data, data + bytes) of `context`, registered until it is destroyed.
  // Throws gloo::IoException when the set was aborted.
  Buffer create(::gloo::Context& context, void* data, size_t bytes);
  // Releases every registered buffer's waits (current or next), calls every wake given to
  // onAbort(), and refuses new buffers. Idempotent.
  void abort();
  // `wake` releases a wait that is not on a Gloo buffer (Note [Shared-memory phases]); called
  // once, by abort(), or at once when the set was already aborted. It must not call back into
  // the set.
  void onAbort(std::function<void()> wake);
  bool aborted() const;
  // Registered buffers (for tests).
  size_t size() const;

 private:
  void remove(::gloo::transport::UnboundBuffer* b);

  mutable std::mutex mu_;
  bool aborted_ = false;
  std::unordered_set<::gloo::transport::UnboundBuffer*> live_;
  std::vector<std::function<void()>> wakes_;
};

}  // namespace ddp::comm
