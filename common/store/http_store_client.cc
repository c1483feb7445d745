#include "common/store/http_store_client.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <thread>

#include "common/store/http_store_wire.h"
#include "common/store/in_memory_store.h"

namespace ddp::comm {

namespace {

constexpr Duration kGrace = std::chrono::milliseconds(250);
constexpr Duration kMinTimeout = std::chrono::milliseconds(1);

std::string keyQuery(const std::vector<std::string>& keys) {
  std::string q;
  for (const auto& k : keys) {
    q += (q.empty() ? "?" : "&");
    q += std::string(store_wire::kKeyParam) + "=" + store_wire::encode(k);
  }
  return q;
}

std::string joinKeys(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

int64_t waitMs(Deadline deadline, Duration longPoll) {
  auto d = std::min(deadline.remaining(), longPoll);
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// The server's reason: store errors are text/plain, errors of the HTTP layer (413 before the
// body, 431...) are JSON {"error": "..."}.
std::string reason(const std::string& body) {
  if (body.empty() || body.front() != '{') return body;
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) return j["error"].get<std::string>();
  return body;
}

}  // namespace

// A "missing" answer well before the hold we asked for means the server could not hold the
// request (Note [Store long poll]): wait a little before asking again instead of spinning.
void HttpStoreClient::backOffIfNotHeld(TimePoint sent, int64_t askedMs, Deadline deadline) const {
  const auto held = SystemClock::instance().now() - sent;
  if (askedMs > 0 && held < std::chrono::milliseconds(askedMs) / 2 && !deadline.expired()) {
    std::this_thread::sleep_for(std::min(options_.retryBackoff, deadline.remaining()));
  }
}

Status HttpStoreClientOptions::validate() const {
  if (connectTimeout <= Duration::zero()) return invalidArgument("store client connectTimeout must be > 0");
  if (requestTimeout <= Duration::zero()) return invalidArgument("store client requestTimeout must be > 0");
  if (longPoll <= Duration::zero()) return invalidArgument("store client longPoll must be > 0");
  if (retryBackoff <= Duration::zero()) return invalidArgument("store client retryBackoff must be > 0");
  if (basePath.empty() || basePath.front() != '/') {
    return invalidArgument("store client basePath '" + basePath + "' must start with '/'");
  }
  if (bearerToken.find_first_of("\r\n") != std::string::npos) {
    return invalidArgument("store client bearerToken contains a line break");
  }
  return Status::ok();
}

HttpStoreClient::HttpStoreClient(std::string host, int port, HttpStoreClientOptions options)
    : host_(std::move(host)),
      port_(port),
      address_(host_ + ":" + std::to_string(port_)),
      options_(std::move(options)) {}

Result<std::unique_ptr<HttpStoreClient>> HttpStoreClient::connect(const std::string& address,
                                                                  HttpStoreClientOptions options) {
  DDP_RETURN_IF_ERROR(options.validate());
  std::string a = address;
  if (a.rfind("http://", 0) == 0) a = a.substr(7);
  while (!a.empty() && a.back() == '/') a.pop_back();
  const size_t colon = a.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0) {
    return invalidArgument("store address '" + address + "' is not host:port");
  }
  auto [p, ec] = std::from_chars(a.data() + colon + 1, a.data() + a.size(), port);
  if (ec != std::errc() || p != a.data() + a.size() || port <= 0 || port > 65535) {
    return invalidArgument("store address '" + address + "' has no valid port");
  }
  return std::make_unique<HttpStoreClient>(a.substr(0, colon), port, std::move(options));
}

std::string HttpStoreClient::target(const char* op, const std::vector<std::string>& keys,
                                    const std::string& extra) const {
  std::string base = options_.basePath;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string t = base + "/" + op + keyQuery(keys);
  if (!extra.empty()) t += (keys.empty() ? "?" : "&") + extra;
  return t;
}

Result<HttpStoreClient::Reply> HttpStoreClient::call(Method method, const std::string& tgt,
                                                     const std::string& body, Deadline deadline,
                                                     Duration readTimeout, const std::string& what,
                                                     std::string* lastError) const {
  while (true) {
    const Duration left = std::max(deadline.remaining(), kMinTimeout);
    httplib::Client cli(host_, port_);
    cli.set_keep_alive(false);
    cli.set_url_encode(false);  // targets are already percent-encoded
    cli.set_connection_timeout(std::min(options_.connectTimeout, left));
    cli.set_read_timeout(std::max(std::min(readTimeout, left + kGrace), kMinTimeout));
    cli.set_write_timeout(left + kGrace);
    if (!options_.bearerToken.empty()) {
      cli.set_default_headers({{"Authorization", "Bearer " + options_.bearerToken}});
    }
    httplib::Result r = [&] {
      switch (method) {
        case Method::kGet: return cli.Get(tgt.c_str());
        case Method::kPut: return cli.Put(tgt.c_str(), body, "application/octet-stream");
        case Method::kPost: return cli.Post(tgt.c_str(), body, "application/octet-stream");
        case Method::kDelete: return cli.Delete(tgt.c_str());
      }
      return cli.Get(tgt.c_str());
    }();
    if (r) {
      Reply reply;
      reply.status = r->status;
      reply.body = r->body;
      reply.missing = r->status == 404 && r->has_header(store_wire::kMissingHeader);
      return reply;
    }
    const httplib::Error err = r.error();
    if (lastError != nullptr) *lastError = httplib::to_string(err);
    // Nothing was sent if the connection failed; GETs are read-only: both are safe to repeat.
    const bool retry = err == httplib::Error::Connection || method == Method::kGet;
    if (retry && !deadline.expired()) {
      std::this_thread::sleep_for(std::min(options_.retryBackoff, deadline.remaining()));
      continue;
    }
    return unavailable("store server " + address_ + " unreachable during " + what + ": " +
                       httplib::to_string(err) + (retry ? " (retried until the deadline)" : ""));
  }
}

Status HttpStoreClient::replyError(const Reply& reply, const std::string& what) const {
  const std::string from = "store server " + address_;
  const std::string why = reason(reply.body);
  switch (reply.status) {
    case 400:
    case 413:
      return invalidArgument(from + " rejected " + what + " (HTTP " + std::to_string(reply.status) + "): " + why);
    case 409: return invalidArgument(why);
    case 401: return failedPrecondition(from + " refused " + what + " (HTTP 401): " + why);
    case 410: return abortedError("fenced: stale generation: " + why + " (" + from + ", " + what + ")");
    case 507: return outOfRange(from + " refused " + what + ": " + why);
    case 503: return unavailable(from + ": " + why);
    default:
      return internalError(from + " answered HTTP " + std::to_string(reply.status) + " to " + what + ": " + why);
  }
}

Status HttpStoreClient::set(const std::string& key, const std::string& value) {
  const std::string what = "set '" + key + "'";
  DDP_ASSIGN_OR_RETURN(Reply r, call(Method::kPut, target(store_wire::kValueOp, {key}), value,
                                     requestDeadline(), options_.requestTimeout, what));
  return r.status == 200 ? Status::ok() : replyError(r, what);
}

Result<std::string> HttpStoreClient::get(const std::string& key, Deadline deadline) {
  const std::string what = "get '" + key + "'";
  auto timedOut = [&](const std::string& lastError) {
    return timeoutError("store get: key '" + key + "' not set before the deadline (server " + address_ +
                        (lastError.empty() ? "" : "; last error: " + lastError) + ")");
  };
  while (true) {
    const int64_t ms = waitMs(deadline, options_.longPoll);
    const std::string tgt =
        target(store_wire::kValueOp, {key}, std::string(store_wire::kWaitParam) + "=" + std::to_string(ms));
    const TimePoint sent = SystemClock::instance().now();
    std::string lastError;
    auto r = call(Method::kGet, tgt, "", deadline, std::chrono::milliseconds(ms) + kGrace, what, &lastError);
    if (!r.isOk()) return timedOut(lastError);  // GETs are retried until the deadline
    if (r->status == 200) return std::move(r->body);
    if (!r->missing) return replyError(*r, what);
    backOffIfNotHeld(sent, ms, deadline);
    if (deadline.expired()) return timedOut("");
  }
}

Result<int64_t> HttpStoreClient::add(const std::string& key, int64_t delta) {
  const std::string what = "add '" + key + "'";
  const std::string tgt =
      target(store_wire::kAddOp, {key}, std::string(store_wire::kDeltaParam) + "=" + std::to_string(delta));
  DDP_ASSIGN_OR_RETURN(Reply r, call(Method::kPost, tgt, "", requestDeadline(), options_.requestTimeout, what));
  if (r.status != 200) return replyError(r, what);
  int64_t v = 0;
  if (!parseStoreInt(r.body, &v)) {
    return internalError("store server " + address_ + " answered " + what + " with a non-integer: '" + r.body + "'");
  }
  return v;
}

Result<std::string> HttpStoreClient::compareSet(const std::string& key, const std::string& expected,
                                                const std::string& desired) {
  const std::string what = "compare_set '" + key + "'";
  const std::string tgt = target(store_wire::kCompareSetOp, {key},
                                 std::string(store_wire::kExpectedLenParam) + "=" + std::to_string(expected.size()));
  DDP_ASSIGN_OR_RETURN(Reply r, call(Method::kPost, tgt, expected + desired, requestDeadline(),
                                     options_.requestTimeout, what));
  if (r.status != 200) return replyError(r, what);
  return std::move(r.body);
}

Result<bool> HttpStoreClient::check(const std::vector<std::string>& keys) {
  const std::string what = "check [" + joinKeys(keys) + "]";
  DDP_ASSIGN_OR_RETURN(Reply r, call(Method::kGet, target(store_wire::kCheckOp, keys), "", requestDeadline(),
                                     options_.requestTimeout, what));
  if (r.status != 200) return replyError(r, what);
  return r.body == "1";
}

Result<bool> HttpStoreClient::deleteKey(const std::string& key) {
  const std::string what = "delete '" + key + "'";
  DDP_ASSIGN_OR_RETURN(Reply r, call(Method::kDelete, target(store_wire::kValueOp, {key}), "", requestDeadline(),
                                     options_.requestTimeout, what));
  if (r.status != 200) return replyError(r, what);
  return r.body == "1";
}

Status HttpStoreClient::wait(const std::vector<std::string>& keys, Deadline deadline) {
  const std::string what = "wait [" + joinKeys(keys) + "]";
  std::string missing = joinKeys(keys);  // until the server says which
  auto timedOut = [&](const std::string& lastError) {
    return timeoutError("store wait: keys not set before the deadline: " + missing + " (server " + address_ +
                        (lastError.empty() ? "" : "; last error: " + lastError) + ")");
  };
  while (true) {
    const int64_t ms = waitMs(deadline, options_.longPoll);
    const std::string tgt = target(store_wire::kWaitOp, keys, std::string(store_wire::kWaitParam) + "=" + std::to_string(ms));
    const TimePoint sent = SystemClock::instance().now();
    std::string lastError;
    auto r = call(Method::kGet, tgt, "", deadline, std::chrono::milliseconds(ms) + kGrace, what, &lastError);
    if (!r.isOk()) return timedOut(lastError);  // GETs are retried until the deadline
    if (r->status == 200) return Status::ok();
    if (!r->missing) return replyError(*r, what);
    std::vector<std::string> absent;
    size_t start = 0;
    while (start < r->body.size()) {
      size_t end = r->body.find('\n', start);
      if (end == std::string::npos) end = r->body.size();
      if (end > start) absent.push_back(store_wire::decode(r->body.substr(start, end - start)));
      start = end + 1;
    }
    missing = joinKeys(absent);
    backOffIfNotHeld(sent, ms, deadline);
    if (deadline.expired()) return timedOut("");
  }
}

}  // namespace ddp::comm
