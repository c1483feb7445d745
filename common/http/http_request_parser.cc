#include "common/http/http_request_parser.h"

#include <vector>

namespace ddp::http {

namespace {

bool isTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
    case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool isToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!isTokenChar(c)) return false;
  }
  return true;
}

std::string_view trimWs(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Printable for diagnostics: at most 60 bytes, control bytes as '?'.
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 60)) out.push_back((static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c);
  if (s.size() > 60) out += "...";
  return out;
}

HeadParse error(int status, std::string reason) {
  HeadParse p;
  p.kind = HeadParse::Kind::kError;
  p.status = status;
  p.reason = std::move(reason);
  return p;
}

// Finds the end of the head (just past the blank line) or npos; updates *scanFrom.
size_t findHeadEnd(std::string_view b, size_t* scanFrom) {
  size_t pos = *scanFrom;
  while (true) {
    const size_t nl = b.find('\n', pos);
    if (nl == std::string_view::npos) {
      *scanFrom = b.size();
      return std::string_view::npos;
    }
    if (nl + 1 >= b.size() || (b[nl + 1] == '\r' && nl + 2 >= b.size())) {
      *scanFrom = nl;  // the blank line may still come: look at this newline again
      return std::string_view::npos;
    }
    if (b[nl + 1] == '\n') return nl + 2;
    if (b[nl + 1] == '\r' && b[nl + 2] == '\n') return nl + 3;
    pos = nl + 1;
  }
}

std::vector<std::string_view> splitLines(std::string_view head) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    const size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    head.remove_prefix(nl + 1);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// Fills method, target, path, query and versionMinor; returns a 400/505 parse on error.
bool parseRequestLine(std::string_view line, Request* r, HeadParse* err) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    *err = error(400, "malformed request line '" + printable(line) + "'");
    return false;
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!isToken(method)) {
    *err = error(400, "malformed method '" + printable(method) + "'");
    return false;
  }
  if (version == "HTTP/1.1") {
    r->versionMinor = 1;
  } else if (version == "HTTP/1.0") {
    r->versionMinor = 0;
  } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && version[6] == '.') {
    *err = error(505, "HTTP version '" + printable(version) + "' is not supported (use HTTP/1.1)");
    return false;
  } else {
    *err = error(400, "malformed HTTP version '" + printable(version) + "'");
    return false;
  }
  if (target.empty()) {
    *err = error(400, "empty request target");
    return false;
  }
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      *err = error(400, "request target contains a control character or space");
      return false;
    }
  }
  std::string originForm(target);
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() > scheme.size() && equalsIgnoreCase(target.substr(0, scheme.size()), scheme)) {
      const size_t slash = target.find_first_of("/?", scheme.size());
      originForm = slash == std::string_view::npos ? "/" : std::string(target.substr(slash));
      if (originForm.front() == '?') originForm.insert(0, "/");
    }
  }
  if (originForm != "*" && originForm.front() != '/') {
    *err = error(400, "malformed request target '" + printable(target) + "'");
    return false;
  }
  r->method = std::string(method);
  r->target = std::move(originForm);
  const std::string_view t = r->target;
  const size_t q = t.find('?');
  r->path = percentDecode(t.substr(0, q));
  if (q != std::string_view::npos) r->query = parseQuery(t.substr(q + 1));
  return true;
}

}  // namespace

bool parseDecimalU64(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

HeadParse parseRequestHead(std::string_view buffer, size_t* scanFrom, size_t maxHeaderBytes) {
  const size_t end = findHeadEnd(buffer, scanFrom);
  if (end == std::string_view::npos) {
    if (buffer.size() > maxHeaderBytes) {
      return error(431, "request head exceeds the limit of " + std::to_string(maxHeaderBytes) + " bytes");
    }
    return HeadParse{};
  }
  if (end > maxHeaderBytes) {
    return error(431, "request head of " + std::to_string(end) + " bytes exceeds the limit of " +
                          std::to_string(maxHeaderBytes) + " bytes");
  }
  const std::vector<std::string_view> lines = splitLines(buffer.substr(0, end));
  if (lines.empty()) return error(400, "empty request");
  HeadParse out;
  if (!parseRequestLine(lines[0], &out.request, &out)) return out;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line.front() == ' ' || line.front() == '\t') {
      return error(400, "obsolete header line folding is not supported");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return error(400, "malformed header line '" + printable(line) + "'");
    const std::string_view name = line.substr(0, colon);
    if (!isToken(name)) return error(400, "malformed header name '" + printable(name) + "'");
    const std::string_view value = trimWs(line.substr(colon + 1));
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) {
        return error(400, "header '" + std::string(name) + "' contains a control character");
      }
    }
    out.request.headers.emplace_back(std::string(name), std::string(value));
  }
  out.kind = HeadParse::Kind::kDone;
  out.headBytes = end;
  return out;
}

BodyFraming bodyFraming(const Request& head) {
  BodyFraming f;
  f.keepAlive = head.versionMinor >= 1 && !headerHasToken(head.header("Connection"), "close");
  bool haveLength = false;
  for (const auto& [name, value] : head.headers) {
    if (equalsIgnoreCase(name, "Transfer-Encoding")) {
      if (headerHasToken(value, "chunked")) {
        f.status = 411;
        f.reason = "chunked request bodies are not supported: send the body with a Content-Length";
      } else {
        f.status = 400;
        f.reason = "unsupported Transfer-Encoding '" + printable(value) + "'";
      }
      return f;
    }
  }
  for (const auto& [name, value] : head.headers) {
    if (!equalsIgnoreCase(name, "Content-Length")) continue;
    // A comma-separated list of equal values is allowed (RFC 9110 8.6); anything else is not.
    std::string_view rest = value;
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view item = trimWs(rest.substr(0, comma));
      uint64_t n = 0;
      if (!parseDecimalU64(item, &n)) {
        f.status = 400;
        f.reason = "Content-Length '" + printable(value) + "' is not a non-negative decimal that fits 64 bits";
        return f;
      }
      if (haveLength && n != f.contentLength) {
        f.status = 400;
        f.reason = "conflicting Content-Length values";
        return f;
      }
      haveLength = true;
      f.contentLength = n;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  f.expectContinue = head.versionMinor >= 1 && f.contentLength > 0 &&
                     equalsIgnoreCase(trimWs(head.header("Expect")), "100-continue");
  return f;
}

}  // namespace ddp::http
