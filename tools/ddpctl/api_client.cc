#include "tools/ddpctl/api_client.h"

#include "common/store/http_store_wire.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ddp::ddpctl {
namespace {

constexpr const char* kServerFlag = "--server";
constexpr const char* kTokenFileFlag = "--token-file";
constexpr const char* kTimeoutFlag = "--timeout";

std::optional<std::string> nonEmpty(const EnvLookup& env, const char* name) {
  if (!env) return std::nullopt;
  std::optional<std::string> v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

Result<std::string> readTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound("cannot read the token file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = trim(ss.str());
  if (token.empty()) return invalidArgument("the token file '" + path + "' is empty");
  return token;
}

Result<Duration> parseTimeout(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || !(v > 0)) {
    return invalidArgument(std::string(kTimeoutFlag) + ": '" + text + "' is not a positive number of seconds");
  }
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(v));
}

// Splits "http(s)://host[:port][/prefix]" (the scheme defaults to http) into the origin and
// the path prefix.
Status splitServerUrl(const std::string& url, std::string* origin, std::string* basePath) {
  std::string rest = url;
  std::string scheme = "http";
  if (const size_t p = rest.find("://"); p != std::string::npos) {
    scheme = rest.substr(0, p);
    rest = rest.substr(p + 3);
  }
  if (scheme != "http" && scheme != "https") {
    return invalidArgument("server URL '" + url + "': the scheme must be http or https");
  }
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  const size_t colon = authority.rfind(':');
  const bool hasPort = colon != std::string::npos && authority.find(']', colon) == std::string::npos;
  const std::string host = hasPort ? authority.substr(0, colon) : authority;
  if (host.empty()) return invalidArgument("server URL '" + url + "' has no host");
  if (hasPort) {
    const std::string port = authority.substr(colon + 1);
    const bool digits = !port.empty() && port.size() <= 5 &&
                        port.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::atoi(port.c_str()) < 1 || std::atoi(port.c_str()) > 65535) {
      return invalidArgument("server URL '" + url + "' has no valid port");
    }
  }
  *origin = scheme + "://" + authority;
  *basePath = path;
  return Status::ok();
}

std::string reasonText(httplib::Error err, Duration timeout) {
  const std::string within = formatDuration(timeout);
  switch (err) {
    case httplib::Error::Connection: return "could not connect (refused, unresolvable or no route to the host)";
    case httplib::Error::ConnectionTimeout: return "no connection within " + within;
    case httplib::Error::Read: return "no complete answer within " + within + " (timed out or connection closed)";
    case httplib::Error::Write: return "could not send the request (connection closed)";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLLoadingCerts:
    case httplib::Error::SSLServerVerification: return "TLS failed (" + httplib::to_string(err) + ")";
    case httplib::Error::Canceled: return "the transfer was stopped";
    default: return httplib::to_string(err);
  }
}

void parseErrorDocument(ApiReply* reply) {
  reply->error = trim(reply->body);
  const nlohmann::json doc = nlohmann::json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return;
  if (auto e = doc.find("error"); e != doc.end() && e->is_string()) reply->error = e->get<std::string>();
  auto details = doc.find("details");
  if (details == doc.end() || !details->is_array()) return;
  for (const auto& d : *details) {
    if (!d.is_object()) continue;
    ApiErrorDetail detail;
    detail.path = d.value("path", std::string());
    detail.message = d.value("message", std::string());
    detail.line = d.contains("line") && d["line"].is_number_integer() ? d["line"].get<int>() : 0;
    detail.column = d.contains("column") && d["column"].is_number_integer() ? d["column"].get<int>() : 0;
    reply->details.push_back(std::move(detail));
  }
}

}  // namespace

EnvLookup processEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v == nullptr ? std::nullopt : std::optional<std::string>(v);
  };
}

Status ClientOptions::validate() const {
  if (timeout <= Duration::zero()) return invalidArgument("the request timeout must be > 0");
  std::string origin, base;
  return splitServerUrl(server, &origin, &base);
}

Result<ClientOptions> takeClientOptions(std::vector<std::string>* args, const EnvLookup& env) {
  ClientOptions o;
  std::optional<std::string> server, tokenFile, timeout;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    std::optional<std::string>* slot = nullptr;
    std::string flag;
    for (const char* f : {kServerFlag, kTokenFileFlag, kTimeoutFlag}) {
      if (a == f || a.rfind(std::string(f) + "=", 0) == 0) flag = f;
    }
    if (flag.empty()) {
      rest.push_back(a);
      continue;
    }
    slot = flag == kServerFlag ? &server : flag == kTokenFileFlag ? &tokenFile : &timeout;
    if (a.size() > flag.size()) {
      *slot = a.substr(flag.size() + 1);
    } else if (i + 1 < args->size()) {
      *slot = (*args)[++i];
    } else {
      return invalidArgument(flag + ": missing value");
    }
    if ((*slot)->empty()) return invalidArgument(flag + ": empty value");
  }
  *args = std::move(rest);

  if (!server) server = nonEmpty(env, "DDP_SERVER");
  if (server) o.server = *server;
  if (timeout) {
    DDP_ASSIGN_OR_RETURN(o.timeout, parseTimeout(*timeout));
  }
  if (tokenFile) {
    DDP_ASSIGN_OR_RETURN(o.token, readTokenFile(*tokenFile));
  } else if (auto token = nonEmpty(env, "DDP_TOKEN")) {
    o.token = trim(*token);
  } else if (auto file = nonEmpty(env, "DDP_TOKEN_FILE")) {
    DDP_ASSIGN_OR_RETURN(o.token, readTokenFile(*file));
  }
  DDP_RETURN_IF_ERROR(o.validate());
  return o;
}

size_t clientOptionLength(const std::vector<std::string>& args, size_t i) {
  if (i >= args.size()) return 0;
  for (const char* f : {kServerFlag, kTokenFileFlag, kTimeoutFlag}) {
    if (args[i] == f) return i + 1 < args.size() ? 2 : 1;
    if (args[i].rfind(std::string(f) + "=", 0) == 0) return 1;
  }
  return 0;
}

std::string percentEncode(const std::string& text) { return comm::store_wire::encode(text); }

std::string jobPath(const std::string& name) { return "/v1/jobs/" + percentEncode(name); }

Result<std::unique_ptr<ApiClient>> ApiClient::create(ClientOptions options) {
  DDP_RETURN_IF_ERROR(options.validate());
  std::string origin, base;
  DDP_RETURN_IF_ERROR(splitServerUrl(options.server, &origin, &base));
  return std::unique_ptr<ApiClient>(new ApiClient(std::move(options), std::move(origin), std::move(base)));
}

namespace {

enum class Method { kGet, kPost, kDelete };

struct Call {
  Method method = Method::kGet;
  std::string target;
  const std::string* body = nullptr;
  std::string contentType;
  Duration readTimeout{};
  const std::function<bool(std::string_view)>* sink = nullptr;  // streamed GET only
};

Result<ApiReply> perform(const std::string& origin, const ClientOptions& o, const Call& call) {
  httplib::Client cli(origin);
  if (!cli.is_valid()) return invalidArgument("server URL '" + o.server + "' is not usable");
  cli.set_keep_alive(false);
  cli.set_url_encode(false);  // targets are percent-encoded already
  cli.set_connection_timeout(o.timeout);
  cli.set_read_timeout(call.readTimeout);
  cli.set_write_timeout(o.timeout);
  httplib::Headers headers = {{"Accept", "application/json"}};
  if (!o.token.empty()) headers.emplace("Authorization", "Bearer " + o.token);

  ApiReply reply;
  httplib::Result r = [&] {
    switch (call.method) {
      case Method::kPost: return cli.Post(call.target, headers, *call.body, call.contentType);
      case Method::kDelete: return cli.Delete(call.target, headers);
      case Method::kGet: break;
    }
    if (call.sink == nullptr) return cli.Get(call.target, headers);
    return cli.Get(
        call.target, headers,
        [&](const httplib::Response& res) {
          reply.status = res.status;
          return true;
        },
        [&](const char* data, size_t n) {
          if (reply.ok()) return (*call.sink)(std::string_view(data, n));
          reply.body.append(data, n);
          return true;
        });
  }();
  if (!r) return unavailable(reasonText(r.error(), call.readTimeout));
  reply.status = r->status;
  reply.contentType = r->get_header_value("Content-Type");
  if (call.sink == nullptr) reply.body = r->body;
  if (!reply.ok()) parseErrorDocument(&reply);
  return reply;
}

}  // namespace

Result<ApiReply> ApiClient::get(const std::string& path) const {
  Call c;
  c.target = basePath_ + path;
  c.readTimeout = options_.timeout;
  return perform(origin_, options_, c);
}

Result<ApiReply> ApiClient::post(const std::string& path, const std::string& body,
                                 const std::string& contentType) const {
  Call c;
  c.method = Method::kPost;
  c.target = basePath_ + path;
  c.body = &body;
  c.contentType = contentType;
  c.readTimeout = options_.timeout;
  return perform(origin_, options_, c);
}

Result<ApiReply> ApiClient::del(const std::string& path) const {
  Call c;
  c.method = Method::kDelete;
  c.target = basePath_ + path;
  c.readTimeout = std::max(options_.timeout, kDeleteReadTimeout);
  return perform(origin_, options_, c);
}

Result<ApiReply> ApiClient::stream(const std::string& path, Duration idleTimeout,
                                   const std::function<bool(std::string_view)>& sink) const {
  Call c;
  c.target = basePath_ + path;
  c.readTimeout = idleTimeout;
  c.sink = &sink;
  return perform(origin_, options_, c);
}

}  // namespace ddp::ddpctl
