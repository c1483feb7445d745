#include "common/http/http_router.h"

#include <algorithm>
#include <set>

#include "common/status.h"
#include "common/utf8.h"

namespace ddp::http {

std::vector<std::string_view> splitPath(std::string_view rawPath) {
  std::vector<std::string_view> out;
  if (rawPath.empty() || rawPath.front() != '/') return out;
  rawPath.remove_prefix(1);
  while (true) {
    const size_t slash = rawPath.find('/');
    out.push_back(rawPath.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rawPath.remove_prefix(slash + 1);
  }
  return out;
}

void Router::add(std::string method, std::string pattern, Handler handler) {
  DDP_CHECK(!pattern.empty() && pattern.front() == '/');
  Route r;
  std::set<std::string> names;
  for (std::string_view s : splitPath(pattern)) {
    Segment seg;
    if (s.size() >= 2 && s.front() == '{' && s.back() == '}') {
      seg.param = true;
      seg.text = std::string(s.substr(1, s.size() - 2));
      DDP_CHECK(!seg.text.empty() && names.insert(seg.text).second);
    } else {
      DDP_CHECK(s.find('{') == std::string_view::npos && s.find('}') == std::string_view::npos);
      seg.text = std::string(s);
    }
    r.segments.push_back(std::move(seg));
  }
  for (const Route& other : routes_) {
    DDP_CHECK(!(other.method == method && other.pattern == pattern));
  }
  r.route = method + " " + pattern;
  r.method = std::move(method);
  r.pattern = std::move(pattern);
  r.handler = std::move(handler);
  routes_.push_back(std::move(r));
}

Router::Match Router::match(std::string_view method, std::string_view rawPath) const {
  const std::vector<std::string_view> raw = splitPath(rawPath);
  std::vector<std::string> decoded;
  decoded.reserve(raw.size());
  for (std::string_view s : raw) decoded.push_back(percentDecode(s));

  Match out;
  const Route* best = nullptr;
  std::set<std::string> allowed;
  // Literal segments are preferred at the first place two matching patterns differ.
  auto moreSpecific = [](const Route& a, const Route& b) {
    for (size_t i = 0; i < a.segments.size(); ++i) {
      if (a.segments[i].param != b.segments[i].param) return !a.segments[i].param;
    }
    return false;
  };
  for (const Route& r : routes_) {
    if (r.segments.size() != decoded.size()) continue;
    bool ok = true;
    for (size_t i = 0; i < decoded.size() && ok; ++i) {
      const Segment& s = r.segments[i];
      ok = s.param ? !decoded[i].empty() : s.text == decoded[i];
    }
    if (!ok) continue;
    if (r.method != method) {
      allowed.insert(r.method);
      continue;
    }
    if (best == nullptr || moreSpecific(r, *best)) best = &r;
  }
  if (best != nullptr) {
    out.kind = Match::Kind::kFound;
    out.handler = &best->handler;
    out.route = &best->route;
    for (size_t i = 0; i < decoded.size(); ++i) {
      if (best->segments[i].param) out.params[best->segments[i].text] = std::move(decoded[i]);
    }
  } else if (!allowed.empty()) {
    out.kind = Match::Kind::kMethodNotAllowed;
    out.allowed.assign(allowed.begin(), allowed.end());
  }
  return out;
}

namespace {

// Note [Invalid UTF-8] (common/utf8.cc): a decoded path or query that is not UTF-8 is refused
// here, before a handler puts it into a message or a JSON document.
std::string invalidUtf8InTarget(const Request& request) {
  if (const size_t at = invalidUtf8Offset(request.path); at != std::string::npos) {
    return "the request path (percent-decoded) is not valid UTF-8 at byte " + std::to_string(at);
  }
  for (const auto& [key, value] : request.query) {
    if (invalidUtf8Offset(key) != std::string::npos || invalidUtf8Offset(value) != std::string::npos) {
      return "query parameter " + toValidUtf8(key) + " is not valid UTF-8";
    }
  }
  return "";
}

}  // namespace

void Router::handle(Request& request, std::shared_ptr<Responder> responder) const {
  if (std::string bad = invalidUtf8InTarget(request); !bad.empty()) {
    if (observer_) observer_(request, std::string(), *responder);
    responder->reply(Response::jsonError(400, bad));
    return;
  }
  Match m = match(request.method, request.rawPath());
  if (observer_) observer_(request, m.route != nullptr ? *m.route : std::string(), *responder);
  switch (m.kind) {
    case Match::Kind::kFound:
      request.params = std::move(m.params);
      (*m.handler)(request, std::move(responder));
      return;
    case Match::Kind::kNotFound:
      responder->reply(Response::jsonError(404, "no such route: " + request.method + " " + request.path));
      return;
    case Match::Kind::kMethodNotAllowed: {
      std::string allow;
      for (const auto& a : m.allowed) allow += (allow.empty() ? "" : ", ") + a;
      Response r = Response::jsonError(405, "method " + request.method + " not allowed for " + request.path +
                                                " (allowed: " + allow + ")");
      r.headers.emplace_back("Allow", allow);
      responder->reply(std::move(r));
      return;
    }
  }
}

Handler Router::handler() const {
  return [this](Request& request, std::shared_ptr<Responder> responder) { handle(request, std::move(responder)); };
}

}  // namespace ddp::http
