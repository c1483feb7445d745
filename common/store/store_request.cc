#include "common/store/store_request.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "common/store/http_store_wire.h"

namespace ddp::comm {

namespace {

using http::Response;
using Parsed = std::variant<StoreRequest, Response>;

Response bad(std::string reason) { return Response::text(400, std::move(reason)); }

bool parseInt(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && p == text.data() + text.size();
}

std::optional<Response> validKey(const std::string& k, const StoreServiceOptions& o) {
  if (k.empty()) return bad("empty key");
  if (k.size() > o.maxKeyBytes) {
    return bad("key of " + std::to_string(k.size()) + " bytes exceeds the limit of " + std::to_string(o.maxKeyBytes));
  }
  if (k.find('\0') != std::string::npos) return bad("key contains a NUL byte");
  return std::nullopt;
}

std::optional<Response> oneKey(const http::Request& req, const StoreServiceOptions& o, StoreRequest* out) {
  std::vector<std::string> keys = req.queryValues(store_wire::kKeyParam);
  if (keys.size() != 1) {
    return bad(keys.empty() ? "missing query parameter 'key'" : "exactly one 'key' parameter expected");
  }
  if (auto err = validKey(keys[0], o)) return err;
  out->keys = std::move(keys);
  return std::nullopt;
}

std::optional<Response> manyKeys(const http::Request& req, const StoreServiceOptions& o, StoreRequest* out) {
  std::vector<std::string> keys = req.queryValues(store_wire::kKeyParam);
  if (keys.size() > o.maxKeysPerRequest) {
    return bad(std::to_string(keys.size()) + " keys exceed the limit of " + std::to_string(o.maxKeysPerRequest) +
               " per request");
  }
  for (const auto& k : keys) {
    if (auto err = validKey(k, o)) return err;
  }
  out->keys = std::move(keys);
  return std::nullopt;
}

std::optional<Response> intParam(const http::Request& req, const char* name, bool required, int64_t* out) {
  const std::optional<std::string> v = req.queryValue(name);
  if (!v) {
    if (required) return bad(std::string("missing query parameter '") + name + "'");
    return std::nullopt;
  }
  if (!parseInt(*v, out)) return bad(std::string("query parameter '") + name + "' = '" + *v + "' is not a decimal int64");
  return std::nullopt;
}

std::optional<Response> waitParam(const http::Request& req, const StoreServiceOptions& o, StoreRequest* out) {
  int64_t ms = 0;
  if (auto err = intParam(req, store_wire::kWaitParam, false, &ms)) return err;
  if (ms < 0) return bad("query parameter 'wait_ms' must be >= 0");
  out->wait = std::min<Duration>(std::chrono::milliseconds(ms), o.maxLongPoll);
  return std::nullopt;
}

std::optional<Response> valueSize(size_t n, const StoreServiceOptions& o) {
  if (n <= o.maxValueBytes) return std::nullopt;
  return Response::text(413, "value of " + std::to_string(n) + " bytes exceeds the limit of " +
                                 std::to_string(o.maxValueBytes));
}

Response methodNotAllowed(const std::string& op, const std::string& method, const std::string& allow) {
  Response r = Response::text(405, "store operation '" + op + "' does not take " + method + " (allowed: " + allow + ")");
  r.headers.emplace_back("Allow", allow);
  return r;
}

Parsed finish(StoreRequest r, std::optional<Response> err) {
  if (err) return std::move(*err);
  return r;
}

}  // namespace

Status StoreServiceOptions::validate() const {
  if (maxKeyBytes == 0) return invalidArgument("store maxKeyBytes must be > 0");
  if (maxValueBytes == 0) return invalidArgument("store maxValueBytes must be > 0");
  if (maxKeysPerRequest == 0) return invalidArgument("store maxKeysPerRequest must be > 0");
  if (maxLongPoll <= Duration::zero()) return invalidArgument("store maxLongPoll must be > 0");
  return Status::ok();
}

Parsed parseStoreRequest(const std::string& op, http::Request& req, const StoreServiceOptions& o) {
  StoreRequest r;
  const std::string& m = req.method;
  if (op == store_wire::kValueOp) {
    if (m == "GET") {
      r.kind = StoreRequest::Kind::kGet;
      auto err = oneKey(req, o, &r);
      if (!err) err = waitParam(req, o, &r);
      return finish(std::move(r), std::move(err));
    }
    if (m == "PUT") {
      r.kind = StoreRequest::Kind::kSet;
      auto err = oneKey(req, o, &r);
      if (!err) err = valueSize(req.body.size(), o);
      r.value = std::move(req.body);
      return finish(std::move(r), std::move(err));
    }
    if (m == "DELETE") {
      r.kind = StoreRequest::Kind::kDelete;
      auto err = oneKey(req, o, &r);
      return finish(std::move(r), std::move(err));
    }
    return methodNotAllowed(op, m, "DELETE, GET, PUT");
  }
  if (op == store_wire::kAddOp) {
    if (m != "POST") return methodNotAllowed(op, m, "POST");
    r.kind = StoreRequest::Kind::kAdd;
    auto err = oneKey(req, o, &r);
    if (!err) err = intParam(req, store_wire::kDeltaParam, true, &r.delta);
    return finish(std::move(r), std::move(err));
  }
  if (op == store_wire::kCompareSetOp) {
    if (m != "POST") return methodNotAllowed(op, m, "POST");
    r.kind = StoreRequest::Kind::kCompareSet;
    int64_t expectedLen = 0;
    auto err = oneKey(req, o, &r);
    if (!err) err = intParam(req, store_wire::kExpectedLenParam, true, &expectedLen);
    if (err) return std::move(*err);
    if (expectedLen < 0 || static_cast<uint64_t>(expectedLen) > req.body.size()) {
      return bad("expected_len " + std::to_string(expectedLen) + " does not fit the body of " +
                 std::to_string(req.body.size()) + " bytes");
    }
    r.expected = req.body.substr(0, static_cast<size_t>(expectedLen));
    r.value = req.body.substr(static_cast<size_t>(expectedLen));
    err = valueSize(r.expected.size(), o);
    if (!err) err = valueSize(r.value.size(), o);
    return finish(std::move(r), std::move(err));
  }
  if (op == store_wire::kCheckOp || op == store_wire::kWaitOp) {
    if (m != "GET") return methodNotAllowed(op, m, "GET");
    r.kind = op == store_wire::kCheckOp ? StoreRequest::Kind::kCheck : StoreRequest::Kind::kWait;
    auto err = manyKeys(req, o, &r);
    if (!err && r.kind == StoreRequest::Kind::kWait) err = waitParam(req, o, &r);
    return finish(std::move(r), std::move(err));
  }
  return Response::text(404, "no such store operation '" + op + "'");
}

Response storeMissing(std::string body) {
  Response r = Response::text(404, std::move(body));
  r.headers.emplace_back(store_wire::kMissingHeader, "missing");
  return r;
}

Response storeFailure(const Status& st) {
  int code = 503;
  switch (st.code()) {
    case StatusCode::kInvalidArgument: code = 409; break;
    case StatusCode::kOutOfRange: code = 507; break;
    case StatusCode::kAborted: code = 410; break;
    default: break;
  }
  return Response::text(code, st.message());
}

Response storeValue(std::string value) {
  Response r;
  r.contentType = "application/octet-stream";
  r.body = std::move(value);
  return r;
}

Response storeText(std::string text) { return Response::text(200, std::move(text)); }

}  // namespace ddp::comm
