#pragma once
// Internal to ddp::http::Server: the epoll loop that owns every connection (Note [Event loop
// server] in http_event_loop.cc).
// Thread model: run() is the loop thread; everything else in this class runs on it, except
// requestStop(), which is thread-safe. Connections are touched only by
// the loop thread; other threads reach it through the Outbox.

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/http/http_client_limits.h"
#include "common/http/http_handler_pool.h"
#include "common/http/http_outbox.h"
#include "common/http/http_server.h"

namespace ddp::http::detail {

class EventLoop {
 public:
  // `listenFd` is bound, listening and non-blocking; the loop does not own it. `live` counts the
  // open connections (read by other threads).
  EventLoop(const ServerOptions& options, int listenFd, std::shared_ptr<Outbox> outbox, HandlerPool& pool,
            std::atomic<size_t>& live);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  Status init();  // creates the epoll set
  // Serves until requestStop(); then closes every connection (their Responders become closed()).
  void run();
  void requestStop();

 private:
  struct Connection;
  enum class Phase { kHead, kBody, kHandling, kLingering };

  void acceptAll(TimePoint now);
  void refuse(int fd, const std::string& why, const char* reason);
  void dropped(const char* reason) const;
  bool evictIdle();
  void onEvents(Connection& c, uint32_t events, TimePoint now);
  void onReadable(Connection& c, TimePoint now);
  void process(Connection& c, TimePoint now);
  bool startBody(Connection& c, TimePoint now);
  void dispatch(Connection& c);
  void fail(Connection& c, int status, const std::string& reason);
  void flush(Connection& c, TimePoint now);
  void completeExchange(Connection& c, TimePoint now);
  void startLinger(Connection& c, TimePoint now);
  void closeConnection(Connection& c);
  void updateInterest(Connection& c);
  void becomeIdle(Connection& c, TimePoint now);
  void leaveIdle(Connection& c);
  void drainOutbox(TimePoint now);
  void sweep(TimePoint now);
  void buryDead();
  Connection* find(uint64_t id);

  const ServerOptions& options_;
  const int listenFd_;
  const std::shared_ptr<Outbox> outbox_;
  HandlerPool& pool_;
  int epollFd_ = -1;
  std::atomic<bool> stopRequested_{false};
  std::atomic<size_t>& live_;
  bool listenPaused_ = false;  // accept() ran out of descriptors: retried at the next tick
  uint64_t nextId_ = 16;       // ids below 16 name the listening socket and the eventfd
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  std::list<uint64_t> idle_;   // connections with no request in flight, longest idle first
  ClientConnectionLimit perClient_;  // connections per client address (maxConnectionsPerClient)
  std::vector<uint64_t> dead_;  // closed during this iteration, destroyed at its end
};

}  // namespace ddp::http::detail
