#pragma once
// Internal to ddp::http::Server: the queue through which Responders on any thread hand response
// bytes to the event loop, and the eventfd that wakes the loop; plus the response serialisation.
// Thread model: Outbox is thread-safe (mu_); push() from any thread, drain() from the loop only.
// It outlives the Server while Responders hold it; once stopped every push() is refused.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/http/http_types.h"
#include "common/status.h"

namespace ddp::http::detail {

struct OutboxItem {
  uint64_t connection = 0;
  std::string bytes;
  bool final = false;  // the request is answered once these bytes are written
  bool close = false;  // close the connection after them
};

class Outbox {
 public:
  static Result<std::shared_ptr<Outbox>> create();
  explicit Outbox(int eventFd) : eventFd_(eventFd) {}
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  int fd() const { return eventFd_; }
  // Queues `item` and wakes the loop; false (nothing queued) once stopped.
  bool push(OutboxItem item);
  // Loop thread: takes every queued item and clears the eventfd.
  std::vector<OutboxItem> drain();
  // Refuses further pushes and wakes the loop.
  void stop();
  bool stopped() const;
  void wake() const;

 private:
  const int eventFd_;
  mutable std::mutex mu_;
  std::vector<OutboxItem> items_;  // guarded by mu_
  bool stopped_ = false;           // guarded by mu_
};

// "HTTP/1.1 <status> <reason>" head plus body with Content-Length; `close` adds Connection: close.
// User headers with CR/LF have them replaced by spaces; Content-Length, Transfer-Encoding and
// Connection among them are dropped (a user "Connection: close" sets *close instead).
std::string serializeResponse(const Response& r, bool* close);
// The head of a streamed response (chunked, or for HTTP/1.0 delimited by the close).
std::string serializeStreamHead(int status, const std::string& contentType, const HeaderList& headers,
                                bool chunked, bool* close);

}  // namespace ddp::http::detail
