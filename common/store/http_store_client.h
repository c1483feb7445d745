#pragma once
// HttpStoreClient: a comm::Store talking to an HttpStoreServer (the controller's rendezvous
// store) over HTTP/1.1; the API is in docs/STORE.md.
//
// Deadlines: get() and wait() take one; the other ops are bounded by
// HttpStoreClientOptions::requestTimeout. Every connection and read timeout is bounded by the
// op's deadline (plus a 250 ms grace for the answer to a long poll, see Note [Store long poll]).
// A blocking get is a series of long polls, so it survives a server that restarts in between.
// Connection failures (nothing was sent) are retried until the deadline, then reported as
// Unavailable naming the server's address; read-only requests (get, wait, check) also retry any
// other transport failure. A blocking get/wait that reaches its deadline is Timeout naming the
// key(s), with the last transport error (if any) as context. A failure of a mutating request
// after it was sent is reported at once (an add() may or may not have been applied).
// Status mapping: 400/409/413 -> InvalidArgument with the server's reason; 401 ->
// FailedPrecondition with the reason; 410 -> Aborted "fenced: stale generation: <reason>";
// 507 (key space quota) -> OutOfRange with the reason; 503 -> Unavailable.
//
// Thread model: thread-safe and stateless between calls; each call opens its own connection
// (no head-of-line blocking behind another thread's long poll).

#include <memory>
#include <string>

#include "common/store/store.h"

namespace ddp::comm {

struct HttpStoreClientOptions {
  Duration connectTimeout = std::chrono::seconds(5);   // per attempt, capped by the deadline
  Duration requestTimeout = std::chrono::seconds(30);  // bound of set/add/compareSet/check/delete
  Duration longPoll = std::chrono::seconds(1);         // hold asked of the server per request
  Duration retryBackoff = std::chrono::milliseconds(50);
  std::string basePath = "/v1/store";  // the controller's: /v1/jobs/<job>/generations/<g>/store
  std::string bearerToken;             // sent as "Authorization: Bearer <token>" when non-empty

  Status validate() const;
};

class HttpStoreClient final : public Store {
 public:
  HttpStoreClient(std::string host, int port, HttpStoreClientOptions options = {});
  // `address` is "host:port" or "http://host:port".
  static Result<std::unique_ptr<HttpStoreClient>> connect(const std::string& address,
                                                          HttpStoreClientOptions options = {});

  const std::string& address() const { return address_; }

  Status set(const std::string& key, const std::string& value) override;
  using Store::get;
  using Store::wait;
  Result<std::string> get(const std::string& key, Deadline deadline) override;
  Result<int64_t> add(const std::string& key, int64_t delta) override;
  Result<std::string> compareSet(const std::string& key, const std::string& expected,
                                 const std::string& desired) override;
  Result<bool> check(const std::vector<std::string>& keys) override;
  Result<bool> deleteKey(const std::string& key) override;
  Status wait(const std::vector<std::string>& keys, Deadline deadline) override;

  struct Reply {
    int status = 0;
    std::string body;
    bool missing = false;  // a 404 meaning "not set (yet)"
  };

 private:
  enum class Method { kGet, kPut, kPost, kDelete };
  // One request; connection failures are retried until `deadline`. The read timeout is
  // `readTimeout` (bounded by the caller).
  // `lastError` (optional) receives the last transport error.
  Result<Reply> call(Method method, const std::string& target, const std::string& body,
                     Deadline deadline, Duration readTimeout, const std::string& what,
                     std::string* lastError = nullptr) const;
  // Maps a non-200 reply to a Status.
  Status replyError(const Reply& reply, const std::string& what) const;
  void backOffIfNotHeld(TimePoint sent, int64_t askedMs, Deadline deadline) const;
  Deadline requestDeadline() const { return Deadline::after(options_.requestTimeout); }
  // basePath + "/" + op + "?key=..." (+ extra query).
  std::string target(const char* op, const std::vector<std::string>& keys, const std::string& extra = "") const;

  const std::string host_;
  const int port_;
  const std::string address_;
  const HttpStoreClientOptions options_;
};

}  // namespace ddp::comm
