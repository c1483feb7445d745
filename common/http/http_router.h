#pragma once
// Router: maps method + path pattern to a Handler for ddp::http::Server. Patterns are literal
// segments and {name} parameters, e.g. "/v1/jobs/{name}/generations/{g}/store/{op}"; a parameter
// matches one non-empty path segment, percent-decoded into Request::params (so "%2F" in a job
// name stays inside its segment). When several patterns match, the one with a literal segment
// at the first place where they differ wins ("/v1/jobs/active" before "/v1/jobs/{name}").
// A path no pattern matches gets 404 {"error": "no such route: GET /x"}; a path matched only by
// patterns of other methods gets 405 with an Allow header.
// Thread model: add() routes before the server starts; afterwards match() and handle() are
// const and may run on any number of threads at once.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/http_server.h"
#include "common/http/http_types.h"

namespace ddp::http {

class Router {
 public:
  struct Match {
    enum class Kind { kFound, kNotFound, kMethodNotAllowed };
    Kind kind = Kind::kNotFound;
    const Handler* handler = nullptr;           // kFound
    const std::string* route = nullptr;         // kFound: "METHOD /pattern"
    std::map<std::string, std::string> params;  // kFound
    std::vector<std::string> allowed;           // kMethodNotAllowed: sorted methods of the path
  };

  // Adds a route. `pattern` starts with '/'; a {name} spans one whole segment and names are
  // unique within the pattern. Adding the same method and pattern twice is a programming error.
  void add(std::string method, std::string pattern, Handler handler);

  // Pure matching of a raw (still percent-encoded) path, without a query.
  Match match(std::string_view method, std::string_view rawPath) const;

  // Routes `request` (its rawPath()), filling request.params; answers 404/405 itself.
  void handle(Request& request, std::shared_ptr<Responder> responder) const;

  // A Handler that calls handle() on this router (which must outlive the server).
  Handler handler() const;

  // Optional, set before the server starts: called by handle() for every request before it is
  // routed, with the matched route ("METHOD /pattern", e.g. "GET /v1/jobs/{name}"; "" when no
  // route matched), e.g. to time the request (Responder::onAnswer). Must be quick.
  using Observer = std::function<void(const Request&, const std::string& route, Responder&)>;
  void setObserver(Observer observer) { observer_ = std::move(observer); }

 private:
  struct Segment {
    bool param = false;
    std::string text;  // literal text, or the parameter name
  };
  struct Route {
    std::string method;
    std::string pattern;
    std::string route;  // method + " " + pattern
    std::vector<Segment> segments;
    Handler handler;
  };

  std::vector<Route> routes_;
  Observer observer_;
};

// Splits a raw path into its segments ("/a/b/" -> "a", "b", ""), not decoded.
std::vector<std::string_view> splitPath(std::string_view rawPath);

}  // namespace ddp::http
