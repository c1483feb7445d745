#pragma once
// The HTTP/1.1 vocabulary of ddp::http: a parsed Request, a Response to send, and the small pure
// helpers both sides share (percent-decoding, query parsing, reason phrases, JSON error bodies).
// Thread model: plain values and pure functions, no shared state.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddp::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;                 // "GET"
  std::string target;                 // raw request target, e.g. "/v1/store/value?key=a%2Fb"
  std::string path;                   // percent-decoded path without the query
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order (repeated keys kept)
  HeaderList headers;                 // as received (names in the client's case), in order
  std::string body;
  std::string remoteAddress;          // "127.0.0.1:54321"
  int versionMinor = 1;               // HTTP/1.<versionMinor>
  std::map<std::string, std::string> params;  // filled by Router from {name} segments

  // The first header named `name` (case-insensitive); "" when absent.
  std::string header(std::string_view name) const;
  bool hasHeader(std::string_view name) const;
  // The first query value of `name`; nullopt when absent.
  std::optional<std::string> queryValue(std::string_view name) const;
  // Every query value of `name`, in order.
  std::vector<std::string> queryValues(std::string_view name) const;
  // The raw (still percent-encoded) path: `target` up to the '?'.
  std::string_view rawPath() const;
};

struct Response {
  int status = 200;
  std::string contentType = "application/json";
  std::string body;
  HeaderList headers;  // extra headers; Content-Length, Transfer-Encoding, Connection are set by the server

  // {"error": message} with `status`.
  static Response jsonError(int status, std::string_view message);
  // `body` as text/plain with `status`.
  static Response text(int status, std::string body);
};

// "OK", "Not Found"... ("Unknown" for codes this library does not know).
const char* reasonPhrase(int status);

// {"error":"<message, JSON-escaped>"}
std::string jsonErrorBody(std::string_view message);
// Escapes `s` for use inside a JSON string literal (quotes not included).
std::string jsonEscape(std::string_view s);

// Decodes %XX escapes (malformed escapes are kept literally); with `plusIsSpace` also '+' -> ' '
// (query strings).
std::string percentDecode(std::string_view s, bool plusIsSpace = false);
// Splits "a=1&b=x%20y&a=2" into decoded pairs in order; a parameter without '=' has value "".
std::vector<std::pair<std::string, std::string>> parseQuery(std::string_view query);

// ASCII case-insensitive equality (header names, tokens).
bool equalsIgnoreCase(std::string_view a, std::string_view b);
// True if the comma-separated header value `list` contains `token` (case-insensitive), e.g.
// headerHasToken("keep-alive, Upgrade", "upgrade").
bool headerHasToken(std::string_view list, std::string_view token);

}  // namespace ddp::http
