#include "controller/kubernetes/token_secret.h"

#include "common/secret.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

// The token of a Secret object, or why it has none.
Result<std::string> tokenOf(const json& secret, const std::string& where) {
  const json data = secret.value("data", json::object());
  if (!data.contains(kApiTokenKey) || !data[kApiTokenKey].is_string()) {
    return invalidArgument("the token Secret " + where + " has no key \"" + kApiTokenKey + "\"");
  }
  auto token = base64Decode(data[kApiTokenKey].get<std::string>());
  if (!token.isOk()) return invalidArgument("the token Secret " + where + ": " + token.status().message());
  while (!token->empty() && (token->back() == '\n' || token->back() == '\r' || token->back() == ' ')) token->pop_back();
  if (token->empty()) return invalidArgument("the token Secret " + where + " holds an empty token");
  return *token;
}

}  // namespace

Result<std::string> loadOrCreateTokenSecret(KubeClient& client, const std::string& nameSpace, const std::string& name) {
  const std::string where = nameSpace + "/" + name;
  const std::string collection = "/api/v1/namespaces/" + nameSpace + "/secrets";
  auto found = client.get(collection + "/" + name);
  if (found.isOk()) return tokenOf(*found, where);
  if (found.status().code() != StatusCode::kNotFound) return found.status();
  DDP_ASSIGN_OR_RETURN(std::string token, randomHex(32));
  const json secret = {{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"metadata",
                        {{"name", name},
                         {"namespace", nameSpace},
                         {"labels", {{"app.kubernetes.io/managed-by", "ddp-controller"}}}}},
                       {"type", "Opaque"},
                       {"data", {{kApiTokenKey, base64Encode(token)}}}};
  auto created = client.create(collection, secret);
  if (created.isOk()) return token;
  if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
  DDP_ASSIGN_OR_RETURN(json winner, client.get(collection + "/" + name));  // another replica's
  return tokenOf(winner, where);
}

}  // namespace ddp::controller::kube
