#pragma once
// HttpStoreServer: serves a comm::Store over HTTP/1.1 (cpp-httplib) for HttpStoreClient; the
// controller embeds it as the rendezvous store of its jobs. The API is documented in
// docs/STORE.md; in short, everything lives under /v1/store, keys travel percent-encoded in the
// `key` query parameter and values as raw (binary-safe) request / response bodies.
//
// Blocking reads are long polls (Note [Store long poll]): the server holds a GET for at most
// `maxLongPoll` and then answers 404 with header `X-Ddp-Store: missing`; the client asks again
// until its own deadline. Malformed or oversized requests get a 4xx whose body gives the reason,
// and the server keeps serving.
//
// Thread model: start() starts one listener thread plus a pool of `threads` request threads
// (cpp-httplib's); stop() (also run by the destructor) stops accepting, releases long polls
// within ~50 ms and joins them all. Every method is thread-safe. Handlers call the backing
// Store concurrently; it must be thread-safe (every Store is).

#include <memory>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "common/store/store.h"

namespace ddp::comm {

struct HttpStoreServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                          // 0: the OS picks a free port (see port())
  size_t maxKeyBytes = 1024;
  size_t maxValueBytes = 16u << 20;      // larger request bodies get 413
  size_t maxKeysPerRequest = 4096;       // for check and wait
  Duration maxLongPoll = std::chrono::seconds(2);
  int threads = 64;                      // request threads; each long poll holds one

  Status validate() const;
};

class HttpStoreServer {
 public:
  // Serves `backing` if given, else a fresh InMemoryStore of its own.
  explicit HttpStoreServer(HttpStoreServerOptions options = {}, std::shared_ptr<Store> backing = nullptr);
  ~HttpStoreServer();
  HttpStoreServer(const HttpStoreServer&) = delete;
  HttpStoreServer& operator=(const HttpStoreServer&) = delete;

  // Binds and starts serving; returns once the server accepts connections (or within `deadline`
  // with Unavailable). Unavailable names the address when the port cannot be bound.
  Status start(Deadline deadline = Deadline::after(std::chrono::seconds(10)));
  // Stops serving and joins every thread. Idempotent.
  void stop();

  bool running() const;
  int port() const;             // the bound port (valid after a successful start())
  std::string address() const;  // "host:port"
  Store& store();               // the backing store, for direct use by the embedding process

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddp::comm
