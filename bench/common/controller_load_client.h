#pragma once
// ControllerLoadClient: a small non-blocking HTTP/1.1 client for load generation: many
// keep-alive connections to one server, driven by epoll from the caller's thread, so one thread
// can stand in for thousands of simulated workers (bench_controller).
//
// Scope: requests are complete byte strings (see httpRequest()); one request in flight per
// connection; responses framed by Content-Length (or empty for 1xx/204/304); a chunked response
// is reported as an error. A connection the server closed (Connection: close, EOF) is reopened
// by the next send() on it; a request that finds its reused connection closed under it is sent
// once more on a fresh one (Note [Stale keep-alive connections] in the .cc; see retries()).
//
// Thread model: starts no thread. Every method runs on the caller's thread; the response callback
// runs inside poll(), on that thread, and may call send() (also on the connection it is told
// about), but not open(). Not thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::bench {

struct LoadResponse {
  int status = 0;        // 0: no response (transport error, see error)
  std::string body;
  std::string error;     // why there is no response
  TimePoint sentAt{};    // send() was called
  TimePoint doneAt{};    // the last byte of the response was read
  double ms() const { return std::chrono::duration<double, std::milli>(doneAt - sentAt).count(); }
};

// A complete HTTP/1.1 request; `token` adds "Authorization: Bearer", `contentType` and a body add
// Content-Type and Content-Length (Content-Length: 0 for a bodyless POST/PUT).
std::string httpRequest(std::string_view method, std::string_view target, std::string_view hostPort,
                        std::string_view token, std::string_view contentType = {}, std::string_view body = {});

class ControllerLoadClient {
 public:
  using OnResponse = std::function<void(int connection, LoadResponse& response)>;

  ControllerLoadClient(std::string host, int port);
  ~ControllerLoadClient();  // closes every connection
  ControllerLoadClient(const ControllerLoadClient&) = delete;
  ControllerLoadClient& operator=(const ControllerLoadClient&) = delete;

  // Creates the epoll set. Call once before anything else.
  Status init();
  void setOnResponse(OnResponse onResponse) { onResponse_ = std::move(onResponse); }

  // Starts a non-blocking connect; returns the new connection's index (0, 1, 2, ...).
  Result<int> open();
  // Connections whose connect completed (and that are still open).
  size_t connected() const { return connected_; }
  // Queues `request` on `connection` and writes what the socket takes now. Precondition: nothing
  // in flight there (busy() is false). A transport error is reported through the callback.
  void send(int connection, std::string request);
  bool busy(int connection) const;
  size_t inFlight() const { return inFlight_; }
  // Requests resent because their reused connection was closed before any answer.
  int64_t retries() const { return retries_; }

  // Handles the events that arrive until `until` (returns after the first batch, or at `until`);
  // completed responses go to the callback. Internal on an epoll failure.
  Status poll(TimePoint until);

  // One request on a fresh connection, answered within `deadline` (user API calls).
  static Result<LoadResponse> roundTrip(const std::string& host, int port, std::string request, Deadline deadline);

 private:
  struct Connection;
  Status startConnect(Connection& c);
  void onEvents(Connection& c, uint32_t events);
  void flush(Connection& c);
  void readAll(Connection& c);
  bool parse(Connection& c);  // true: a response completed (delivered)
  void retryOnFreshSocket(Connection& c);
  void fail(Connection& c, const std::string& error);
  void closeFd(Connection& c);
  void updateInterest(Connection& c);
  void deliver(Connection& c, LoadResponse response);

  const std::string host_;
  const int port_;
  int epollFd_ = -1;
  OnResponse onResponse_;
  std::vector<std::unique_ptr<Connection>> connections_;
  size_t connected_ = 0;
  size_t inFlight_ = 0;
  int64_t retries_ = 0;
  std::vector<char> readBuffer_;
};

}  // namespace ddp::bench
