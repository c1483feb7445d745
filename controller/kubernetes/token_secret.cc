#include "controller/kubernetes/token_secret.h"

#include "common/secret.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

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

std::string base64Encode(const std::string& in) {
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

Result<std::string> base64Decode(const std::string& text) {
  if (text.size() % 4 != 0) return invalidArgument("not base64 (length " + std::to_string(text.size()) + ")");
  std::string out;
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const char* at = std::char_traits<char>::find(kAlphabet, 64, c);
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        ++pad;
      } else if (at == nullptr || pad > 0) {
        return invalidArgument("not base64 (character " + std::to_string(i + k) + ")");
      }
      v = v << 6 | (at == nullptr ? 0 : static_cast<uint32_t>(at - kAlphabet));
    }
    out += static_cast<char>(v >> 16);
    if (pad < 2) out += static_cast<char>(v >> 8 & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

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
