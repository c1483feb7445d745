#pragma once
// The store's HTTP wire protocol (docs/STORE.md) on the server side, as pure functions: parsing
// one operation's request into a StoreRequest (or the 4xx reply that rejects it), and the
// replies shared by every way of executing it (StoreService over a KeySpace, HttpStoreServer
// over a backing Store).
// Thread model: pure functions.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "common/http/http_types.h"
#include "common/status.h"

namespace ddp::comm {

struct StoreServiceOptions {
  size_t maxKeyBytes = 1024;
  size_t maxValueBytes = 16u << 20;  // larger values get 413
  size_t maxKeysPerRequest = 4096;   // for check and wait
  Duration maxLongPoll = std::chrono::seconds(2);

  Status validate() const;
  // The largest request body accepted at all (compare_set carries two values).
  size_t bodyLimit() const { return 2 * maxValueBytes + 1024; }
};

struct StoreRequest {
  enum class Kind { kGet, kSet, kDelete, kAdd, kCompareSet, kCheck, kWait };
  Kind kind = Kind::kGet;
  std::vector<std::string> keys;  // exactly one except for check and wait
  Duration wait{};                // get, wait: how long to hold the request (<= maxLongPoll)
  int64_t delta = 0;              // add
  std::string value;              // set: the value; compare_set: the desired value
  std::string expected;           // compare_set
};

// Parses operation `op` ("value", "add", "compare_set", "check", "wait") of `request`; moves the
// body out of it. A rejection is the reply to send: 400 (malformed), 404 (unknown op), 405 (op
// exists for other methods, with Allow), 413 (value over maxValueBytes).
std::variant<StoreRequest, http::Response> parseStoreRequest(const std::string& op, http::Request& request,
                                                             const StoreServiceOptions& options);

// 404 with `X-Ddp-Store: missing`: the key(s) are not set (yet). `body` is the percent-encoded
// key for get, one percent-encoded missing key per line for wait.
http::Response storeMissing(std::string body);
// The reply for a failed store call: InvalidArgument 409, OutOfRange (quota) 507, Aborted
// (key space gone) 410, anything else 503. text/plain with the reason.
http::Response storeFailure(const Status& status);
// 200 with an application/octet-stream value.
http::Response storeValue(std::string value);
// 200 text/plain.
http::Response storeText(std::string text);

}  // namespace ddp::comm
