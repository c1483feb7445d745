#pragma once
// ddp::http::Server: an HTTP/1.1 server on one epoll event loop, built for many mostly idle
// connections and long polls (Note [Event loop server] in http_event_loop.cc). A request that
// waits (a long poll, a rendezvous) holds no thread: its handler keeps the Responder and replies
// later from any thread.
//
// Scope: HTTP/1.1 keep-alive and HTTP/1.0 (closed after each reply); request bodies with
// Content-Length only (chunked request bodies get 411); replies with Content-Length or streamed
// with chunked transfer encoding; pipelined requests are answered in order (the next request is
// read only once the current reply was written). No TLS, no HEAD special-casing, no HTTP/2.
// Every error the server produces itself (400, 408, 411, 413, 431, 503, 505) has a JSON body
// {"error": "..."} and closes that connection; the server keeps serving the others.
//
// Thread model: start() starts one event-loop thread (accepts, reads, parses and writes for every
// connection; checks timers every 100 ms) and `handlerThreads` handler threads that run the
// Handler, one request at a time each. The Handler never runs on the loop thread and must not
// block for long; a reply from another thread wakes the loop through an eventfd. stop() (also
// run by the destructor) closes every connection (pending Responders become closed()) and joins
// all threads; it must not be called from a handler thread. Server's methods are thread-safe.
// Responder is thread-safe and may outlive the Server.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/http/http_types.h"
#include "common/status.h"

namespace ddp::http {

namespace detail {
class Outbox;
class EventLoop;
}  // namespace detail

// One request's reply handle. reply() once (later calls are ignored and return false), or
// startStream(), write() chunks, finish(). After the client went away or the server stopped,
// reply()/write() return false and do nothing. A Responder dropped without a reply answers 500;
// one dropped mid-stream cuts the connection (the client sees an incomplete chunked body).
class Responder {
 public:
  // Made by the server for each request (public for make_shared; not for users).
  Responder(std::shared_ptr<detail::Outbox> outbox, uint64_t connection, int versionMinor, bool keepAlive);
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  bool reply(Response response);
  // Streaming (chunked transfer encoding; HTTP/1.0 clients get a body ended by the close).
  bool startStream(int status, std::string contentType, HeaderList headers = {});
  bool write(std::string_view chunk);  // an empty chunk is a no-op
  void finish();

  // The connection is gone (client closed, server stopping): nothing sent now arrives.
  bool closed() const;
  // reply() or finish() was called (the request is answered).
  bool done() const;
  // Runs `callback` once when the connection closes before the request was answered (at once, on
  // the caller's thread, if it already has); e.g. to drop a long-poll waiter. It runs on the
  // event-loop thread, so it must be quick and must not wait on anything.
  void onClose(std::function<void()> callback);
  // Runs `callback` once with the status when the request is answered (reply() or
  // startStream()), on the answering thread, just before the answer is handed to the
  // connection (e.g. request metrics). Set it before the handler runs; it must be quick and must
  // not call this Responder (it runs under its lock).
  void onAnswer(std::function<void(int status)> callback);

 private:
  friend class detail::EventLoop;
  enum class State { kFresh, kStreaming, kDone };
  bool push(std::string bytes, bool final, bool close);
  void markClosed();  // event-loop thread: the connection is gone

  const std::shared_ptr<detail::Outbox> outbox_;
  const uint64_t connection_;
  const int versionMinor_;
  const bool keepAlive_;
  mutable std::mutex mu_;
  State state_ = State::kFresh;       // guarded by mu_
  bool closeAfterStream_ = false;     // guarded by mu_
  std::function<void()> onClose_;     // guarded by mu_
  std::function<void(int)> onAnswer_; // guarded by mu_
  std::atomic<bool> closed_{false};
};

using Handler = std::function<void(Request&, std::shared_ptr<Responder>)>;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                        // 0: the OS picks a free port (see Server::port())
  size_t maxConnections = 8192;        // at the cap the longest-idle keep-alive connection is closed to admit a new one
  // Connections one client address may hold at once (0: no limit); past it a new connection
  // gets 503 and is closed. Counted before the global cap, so one address cannot take it all.
  size_t maxConnectionsPerClient = 0;
  // Optional: called on the event-loop thread for each connection the server ends itself:
  // "capacity" (refused at maxConnections, none idle), "per_client" (refused at
  // maxConnectionsPerClient), "timeout" (408: the request did not arrive in time), "malformed"
  // (400, 411, 413, 431, 505). Must be quick (a counter).
  std::function<void(const char* reason)> onDropped;
  size_t maxHeaderBytes = 16 << 10;    // a longer request head gets 431
  size_t maxBodyBytes = 1 << 20;       // default body limit (413)
  // Optional per-request body limit, asked once the head is parsed (path, query and headers are
  // set; e.g. 16 MiB on store routes). Runs on the event-loop thread: it must be quick.
  std::function<size_t(const Request& head)> bodyLimit;
  Duration idleTimeout = std::chrono::seconds(60);     // keep-alive connection with no request in flight is closed
  Duration requestTimeout = std::chrono::seconds(10);  // a request must arrive completely within this (408)
  int handlerThreads = 4;              // handlers run on these; they must not block for long
  // Optional: requests for which this returns true run their handler on the event-loop thread
  // itself, saving the hand-off to a pool thread and back (two context switches per request).
  // Only for handlers that never block: short locks, then reply or defer at once. Asked on the
  // event-loop thread once the request is complete.
  std::function<bool(const Request& request)> runInline;
  int listenBacklog = 4096;            // capped by net.core.somaxconn

  Status validate() const;
};

class Server {
 public:
  Server(ServerOptions options, Handler handler);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts serving (event-loop thread + handler pool); connections are accepted when it
  // returns. Unavailable naming host:port when it cannot bind; FailedPrecondition when called
  // twice (servers are not restartable).
  Status start();
  // Stops accepting, closes every connection (pending deferred Responders become closed()),
  // joins every thread. Idempotent. Not from a handler thread.
  void stop();

  bool running() const;
  int port() const;             // the bound port (valid after a successful start())
  std::string address() const;  // "host:port"
  size_t connectionCount() const;  // open connections now

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddp::http
