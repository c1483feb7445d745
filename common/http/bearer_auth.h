#pragma once
// Bearer authentication as one middleware: every authenticated route of the controller (the
// user API, the worker routes, GET /metrics) wraps its handler in withBearerAuth(), so the 401
// answers are written in one place. A request without "Authorization: Bearer <token>" gets 401
// "missing bearer token (Authorization: Bearer <token>[hint])"; a token the check refuses gets
// 401 with the route's refusal text. Tokens are compared in constant time (secretEquals).
// Thread model: the wrapped handler runs on the server's handler threads, like any handler;
// `accepts` must be safe to call from them.

#include <functional>
#include <string>

#include "common/http/http_router.h"

namespace ddp::http {

// The token of an "Authorization: Bearer <token>" header (scheme case-insensitive); "" when
// absent or malformed.
std::string bearerToken(const Request& req);

struct BearerAuth {
  // Whether the presented (non-empty) token is accepted for `req` (it may read route params).
  std::function<bool(const Request& req, const std::string& presented)> accepts;
  // The 401 text for a refused token; "invalid token" when empty.
  std::function<std::string(const Request& req)> refusal;
  // Added to the missing-token text inside its parentheses, e.g. "; or start with --open".
  std::string missingHint;
};

// One fixed token (the controller's API token).
BearerAuth fixedBearerToken(std::string token, std::string missingHint = "");

// `h` behind the check: it runs only for an accepted token.
Handler withBearerAuth(BearerAuth auth, Handler h);

}  // namespace ddp::http
