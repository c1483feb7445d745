#include "common/http/bearer_auth.h"

#include <memory>
#include <string_view>
#include <utility>

#include "common/secret.h"

namespace ddp::http {

std::string bearerToken(const Request& req) {
  const std::string h = req.header("Authorization");
  constexpr std::string_view kPrefix = "Bearer ";
  if (h.size() <= kPrefix.size() || !equalsIgnoreCase(std::string_view(h).substr(0, kPrefix.size()), kPrefix)) {
    return "";
  }
  return h.substr(kPrefix.size());
}

BearerAuth fixedBearerToken(std::string token, std::string missingHint) {
  BearerAuth auth;
  auth.accepts = [token = std::move(token)](const Request&, const std::string& presented) {
    return secretEquals(token, presented);
  };
  auth.missingHint = std::move(missingHint);
  return auth;
}

Handler withBearerAuth(BearerAuth auth, Handler h) {
  auto a = std::make_shared<const BearerAuth>(std::move(auth));
  return [a, h = std::move(h)](Request& req, std::shared_ptr<Responder> res) {
    const std::string presented = bearerToken(req);
    if (presented.empty()) {
      return (void)res->reply(
          Response::jsonError(401, "missing bearer token (Authorization: Bearer <token>" + a->missingHint + ")"));
    }
    if (!a->accepts(req, presented)) {
      return (void)res->reply(Response::jsonError(401, a->refusal ? a->refusal(req) : "invalid token"));
    }
    h(req, std::move(res));
  };
}

}  // namespace ddp::http
