#pragma once
// ApiClient: the controller's user API (docs/API.md) over HTTP or HTTPS, for ddpctl's client
// commands. Every request carries the controller token and is bounded by
// ClientOptions::timeout (connect, send and each read); a streamed GET (logs -f) bounds the
// wait for each chunk by the idle timeout it is given instead.
// ClientOptions is the client's config: the global options --server, --token-file and
// --timeout, with DDP_SERVER, DDP_TOKEN and DDP_TOKEN_FILE as fallbacks; it is the only code
// of the client commands that reads the environment (through an injected lookup).
// Thread model: an ApiClient is used by one thread at a time; calls block that thread; it
// starts no threads.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::ddpctl {

// Environment lookup, injectable for tests (nullopt: unset).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup processEnvironment();

inline constexpr const char* kDefaultServer = "http://127.0.0.1:8080";
inline constexpr Duration kDefaultRequestTimeout = std::chrono::seconds(10);
// DELETE answers once a running job was cancelled (the controller waits up to 15 s by default
// for its workers): its answer may take this long even when --timeout is shorter.
inline constexpr Duration kDeleteReadTimeout = std::chrono::seconds(30);

struct ClientOptions {
  std::string server = kDefaultServer;  // http(s)://host[:port][/prefix]
  std::string token;                    // empty: no Authorization header
  Duration timeout = kDefaultRequestTimeout;

  Status validate() const;
};

// Removes the global options (--server URL, --token-file FILE, --timeout SECONDS, also as
// --opt=value) from anywhere in `args` and returns the options they set, with the environment
// as fallback: DDP_SERVER; the token from --token-file, else DDP_TOKEN, else the file named by
// DDP_TOKEN_FILE. InvalidArgument for a missing or bad value, NotFound for an unreadable token
// file.
Result<ClientOptions> takeClientOptions(std::vector<std::string>* args, const EnvLookup& env);

// How many of `args` from `i` on one global option takes (2 for "--server URL", 1 for
// "--server=URL"), 0 when args[i] is not one. Lets ddpctl find the command after them.
size_t clientOptionLength(const std::vector<std::string>& args, size_t i);

// One entry of an error document's "details" (line and column 0 when the server sent none).
struct ApiErrorDetail {
  std::string path;
  std::string message;
  int line = 0;
  int column = 0;
};

// An HTTP answer. For a status other than 2xx, `error` and `details` hold the error document's
// fields when the body is one ({"error": ..., "details": [...]}); else `error` is the body.
struct ApiReply {
  int status = 0;
  std::string body;
  std::string contentType;
  std::string error;
  std::vector<ApiErrorDetail> details;

  bool ok() const { return status >= 200 && status < 300; }
};

// `text` with every byte but [A-Za-z0-9-._~] percent-encoded (a path segment or query value).
std::string percentEncode(const std::string& text);
// "/v1/jobs/" + the name, percent-encoded as one path segment.
std::string jobPath(const std::string& name);

class ApiClient {
 public:
  // InvalidArgument when options.server is not an http(s) URL.
  static Result<std::unique_ptr<ApiClient>> create(ClientOptions options);

  // The server URL as the user gave it (for messages).
  const std::string& server() const { return options_.server; }
  Duration timeout() const { return options_.timeout; }

  // Unavailable (with the reason: refused, timed out, ...) when no answer came back; any HTTP
  // status is a reply.
  Result<ApiReply> get(const std::string& path) const;
  Result<ApiReply> post(const std::string& path, const std::string& body, const std::string& contentType) const;
  // Waits for the answer up to the larger of --timeout and kDeleteReadTimeout.
  Result<ApiReply> del(const std::string& path) const;

  // GET whose body is handed to `sink` chunk by chunk as it arrives when the status is 2xx (an
  // error status's body goes into the reply instead). Waits up to `idleTimeout` for each
  // chunk. `sink` returning false stops the transfer (the reply is then Unavailable).
  Result<ApiReply> stream(const std::string& path, Duration idleTimeout,
                          const std::function<bool(std::string_view)>& sink) const;

 private:
  ApiClient(ClientOptions options, std::string origin, std::string basePath)
      : options_(std::move(options)), origin_(std::move(origin)), basePath_(std::move(basePath)) {}

  ClientOptions options_;
  std::string origin_;    // "http://host:port"
  std::string basePath_;  // "" or "/prefix"
};

}  // namespace ddp::ddpctl
