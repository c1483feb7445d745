#pragma once
// StoreService: the rendezvous store's HTTP protocol (docs/STORE.md) served asynchronously over
// ddp::http against KeySpaces. Blocking reads are long polls held as KeySpace waiters, not
// threads (Note [Store long poll] in store_service.cc): a handler thread parses the request,
// registers the waiter and returns; the reply is sent by whichever thread makes the keys appear
// (a set), or by the service's timer thread when the hold runs out (404 X-Ddp-Store: missing),
// and the waiter is dropped at once when the client goes away.
//
// The caller authenticates and picks the key space: HttpStoreServer mounts one at
// /v1/store/{op}, the controller one per job generation at /v1/jobs/{name}/generations/{g}/store/{op}.
// Set ServerOptions::bodyLimit to bodyLimit() on those routes.
//
// Thread model: the constructor starts one timer thread; handle() is thread-safe and never
// blocks (run it on the server's handler threads). The destructor stops the timer and answers
// every long poll it still holds with 404 missing (the clients ask again).

#include <memory>
#include <string>

#include "common/http/http_server.h"
#include "common/http/timer_queue.h"
#include "common/store/key_space.h"
#include "common/store/store_request.h"

namespace ddp::comm {

class StoreService {
 public:
  // Precondition: options.validate() is ok.
  explicit StoreService(StoreServiceOptions options = {});
  ~StoreService();
  StoreService(const StoreService&) = delete;
  StoreService& operator=(const StoreService&) = delete;

  // Serves one store operation `op` ("value", "add", "compare_set", "check", "wait") of
  // `request` against `space`, replying through `responder` at once, or later for a long poll.
  void handle(const std::shared_ptr<KeySpace>& space, const std::string& op, http::Request& request,
              std::shared_ptr<http::Responder> responder);

  // For ServerOptions::bodyLimit on store routes (compare_set carries two values).
  size_t bodyLimit() const { return options_.bodyLimit(); }
  const StoreServiceOptions& options() const { return options_; }

 private:
  void longPoll(const std::shared_ptr<KeySpace>& space, std::vector<std::string> keys, Duration wait, bool isGet,
                std::shared_ptr<http::Responder> responder);

  const StoreServiceOptions options_;
  http::TimerQueue timers_;
};

}  // namespace ddp::comm
