#pragma once
// HttpStoreServer: serves the rendezvous store over HTTP/1.1 for HttpStoreClient, on a
// ddp::http::Server (one event loop) with a StoreService over one KeySpace of its own; ddpctl
// and the benches embed it. The API is documented in docs/STORE.md; in short, everything lives
// under /v1/store, keys travel percent-encoded in the `key` query parameter and values as raw
// (binary-safe) request / response bodies.
//
// Blocking reads are long polls (Note [Store long poll] in store_service.cc): the server holds
// a GET for at most `maxLongPoll` as a key-space waiter, not a thread, and then answers 404 with
// header `X-Ddp-Store: missing`; the client asks again until its own deadline. Malformed or
// oversized requests get a 4xx whose body gives the reason, and the server keeps serving.
// Given a backing Store instead, the server serves it synchronously: each long poll then holds
// a handler thread (in 50 ms slices), and when all but a few threads are held further blocking
// reads are answered at once (the client backs off), so short requests are never queued.
//
// Thread model: start() starts the http::Server's event-loop thread and `threads` handler
// threads, plus the StoreService's timer thread (created with the server); stop() (also run by
// the destructor) closes every connection, answers nothing more and joins them all. Every
// method is thread-safe. A backing Store must be thread-safe (every Store is).

#include <memory>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "common/store/key_space.h"
#include "common/store/store.h"
#include "common/store/store_request.h"

namespace ddp::comm {

struct HttpStoreServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                          // 0: the OS picks a free port (see port())
  size_t maxKeyBytes = 1024;
  size_t maxValueBytes = 16u << 20;      // larger values get 413
  size_t maxKeysPerRequest = 4096;       // for check and wait
  Duration maxLongPoll = std::chrono::seconds(2);
  int threads = 4;                       // handler threads (>= 2); long polls hold none (but see above)
  size_t quotaBytes = 0;                 // byte quota of the key space (0: none); 507 past it

  Status validate() const;
  StoreServiceOptions serviceOptions() const;
};

class HttpStoreServer {
 public:
  // Serves `backing` if given, else a KeySpace of its own.
  explicit HttpStoreServer(HttpStoreServerOptions options = {}, std::shared_ptr<Store> backing = nullptr);
  ~HttpStoreServer();
  HttpStoreServer(const HttpStoreServer&) = delete;
  HttpStoreServer& operator=(const HttpStoreServer&) = delete;

  // Binds and starts serving; connections are accepted when it returns. Binding does not wait,
  // so `deadline` is not needed any more (kept for source compatibility). Unavailable naming the
  // address when the port cannot be bound; FailedPrecondition when called twice.
  Status start(Deadline deadline = Deadline::after(std::chrono::seconds(10)));
  // Stops serving and joins every thread. Idempotent.
  void stop();

  bool running() const;
  int port() const;             // the bound port (valid after a successful start())
  std::string address() const;  // "host:port"
  Store& store();               // the served store, for direct use by the embedding process
  // The served key space; null when serving a backing Store.
  std::shared_ptr<KeySpace> keySpace() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddp::comm
