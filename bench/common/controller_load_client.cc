#include "bench/common/controller_load_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

namespace ddp::bench {
namespace {

constexpr int kMaxEvents = 1024;
constexpr size_t kReadChunk = 256 << 10;
constexpr size_t kNoHead = std::string::npos;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

std::string httpRequest(std::string_view method, std::string_view target, std::string_view hostPort,
                        std::string_view token, std::string_view contentType, std::string_view body) {
  std::string r;
  r.reserve(256 + body.size());
  r.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: ").append(hostPort).append("\r\n");
  if (!token.empty()) r.append("Authorization: Bearer ").append(token).append("\r\n");
  if (!contentType.empty()) r.append("Content-Type: ").append(contentType).append("\r\n");
  if (!body.empty() || method == "POST" || method == "PUT") {
    r.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  r.append("\r\n").append(body);
  return r;
}

struct ControllerLoadClient::Connection {
  int index = 0;
  int fd = -1;
  uint32_t epoch = 0;         // bumped per socket: events of a closed socket are ignored
  uint32_t interest = 0;      // the epoll mask registered now
  bool connecting = false;
  bool busy = false;          // a request is in flight
  std::string out;
  size_t outOff = 0;
  std::string in;
  size_t scanned = 0;         // bytes of `in` searched for the end of the head
  size_t headEnd = kNoHead;   // bytes of the head, blank line included
  size_t contentLength = 0;
  int status = 0;
  bool closeAfter = false;
  TimePoint sentAt{};
  bool reused = false;        // this socket already carried a complete exchange
  bool retried = false;       // the request in flight was resent once on a fresh socket
};

ControllerLoadClient::ControllerLoadClient(std::string host, int port)
    : host_(std::move(host)), port_(port), readBuffer_(kReadChunk) {}

ControllerLoadClient::~ControllerLoadClient() {
  for (auto& c : connections_) closeFd(*c);
  if (epollFd_ >= 0) ::close(epollFd_);
}

Status ControllerLoadClient::init() {
  epollFd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epollFd_ < 0) return internalError(errnoText("epoll_create1"));
  return Status::ok();
}

Result<int> ControllerLoadClient::open() {
  auto c = std::make_unique<Connection>();
  c->index = static_cast<int>(connections_.size());
  DDP_RETURN_IF_ERROR(startConnect(*c));
  connections_.push_back(std::move(c));
  return connections_.back()->index;
}

Status ControllerLoadClient::startConnect(Connection& c) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return unavailable(errnoText("socket"));
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  if (::inet_pton(AF_INET, host_.c_str(), &addr.sin_addr) != 1) {
    ::close(fd);
    return invalidArgument("not an IPv4 address: " + host_);
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    const std::string why = errnoText("connect");
    ::close(fd);
    return unavailable(why + " (" + host_ + ":" + std::to_string(port_) + ")");
  }
  c.fd = fd;
  c.epoch++;
  c.connecting = true;
  c.reused = false;
  c.interest = EPOLLIN | EPOLLOUT;
  epoll_event ev{};
  ev.events = c.interest;
  ev.data.u64 = (static_cast<uint64_t>(c.index) << 32) | c.epoch;
  if (::epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    const std::string why = errnoText("epoll_ctl ADD");
    ::close(fd);
    c.fd = -1;
    return internalError(why);
  }
  return Status::ok();
}

bool ControllerLoadClient::busy(int connection) const { return connections_[static_cast<size_t>(connection)]->busy; }

void ControllerLoadClient::send(int connection, std::string request) {
  Connection& c = *connections_[static_cast<size_t>(connection)];
  DDP_CHECK(!c.busy);
  c.busy = true;
  ++inFlight_;
  c.out = std::move(request);
  c.outOff = 0;
  c.retried = false;
  c.in.clear();
  c.scanned = 0;
  c.headEnd = kNoHead;
  c.sentAt = std::chrono::steady_clock::now();
  if (c.fd < 0) {
    Status st = startConnect(c);
    if (!st.isOk()) return fail(c, st.message());
    return;  // written once connected
  }
  if (!c.connecting) flush(c);
}

void ControllerLoadClient::flush(Connection& c) {
  while (c.outOff < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.outOff, c.out.size() - c.outOff, MSG_NOSIGNAL);
    if (n > 0) {
      c.outOff += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (c.reused && !c.retried && (errno == EPIPE || errno == ECONNRESET)) {
      closeFd(c);
      return retryOnFreshSocket(c);
    }
    return fail(c, errnoText("send"));
  }
  updateInterest(c);
}

void ControllerLoadClient::updateInterest(Connection& c) {
  if (c.fd < 0) return;
  const uint32_t want = EPOLLIN | ((c.connecting || c.outOff < c.out.size()) ? EPOLLOUT : 0u);
  if (want == c.interest) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = (static_cast<uint64_t>(c.index) << 32) | c.epoch;
  if (::epoll_ctl(epollFd_, EPOLL_CTL_MOD, c.fd, &ev) != 0) return fail(c, errnoText("epoll_ctl MOD"));
  c.interest = want;
}

Status ControllerLoadClient::poll(TimePoint until) {
  epoll_event events[kMaxEvents];
  const auto left = until - std::chrono::steady_clock::now();
  timespec ts{};
  if (left.count() > 0) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    ts.tv_sec = ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
  }
  const int n = ::epoll_pwait2(epollFd_, events, kMaxEvents, &ts, nullptr);
  if (n < 0) {
    if (errno == EINTR) return Status::ok();
    return internalError(errnoText("epoll_pwait2"));
  }
  for (int i = 0; i < n; ++i) {
    const auto index = static_cast<size_t>(events[i].data.u64 >> 32);
    const auto epoch = static_cast<uint32_t>(events[i].data.u64);
    if (index >= connections_.size()) continue;
    Connection& c = *connections_[index];
    if (c.fd < 0 || c.epoch != epoch) continue;  // closed (and maybe reopened) earlier in this batch
    onEvents(c, events[i].events);
  }
  return Status::ok();
}

void ControllerLoadClient::onEvents(Connection& c, uint32_t events) {
  if (c.connecting && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      errno = err;
      const std::string why = errnoText("connect");
      closeFd(c);
      if (c.busy) fail(c, why);
      return;
    }
    c.connecting = false;
    ++connected_;
  }
  if (events & EPOLLIN || events & (EPOLLERR | EPOLLHUP)) {
    readAll(c);
    if (c.fd < 0) return;
  }
  if (!c.connecting && c.outOff < c.out.size()) {
    flush(c);
  } else {
    updateInterest(c);
  }
}

void ControllerLoadClient::readAll(Connection& c) {
  for (;;) {
    const ssize_t n = ::recv(c.fd, readBuffer_.data(), readBuffer_.size(), 0);
    if (n > 0) {
      if (!c.busy) return fail(c, "unsolicited bytes from the server");
      c.in.append(readBuffer_.data(), static_cast<size_t>(n));
      const int epoch = static_cast<int>(c.epoch);
      if (parse(c)) {
        // The callback may have sent the next request (same socket) or the socket was closed.
        if (c.fd < 0 || static_cast<int>(c.epoch) != epoch) return;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    const std::string why = n == 0 ? "the server closed the connection" : errnoText("recv");
    const bool wasBusy = c.busy;
    const bool stale = wasBusy && c.reused && !c.retried && c.in.empty();
    closeFd(c);
    if (stale) return retryOnFreshSocket(c);
    if (wasBusy) fail(c, why);
    return;
  }
}

bool ControllerLoadClient::parse(Connection& c) {
  if (c.headEnd == kNoHead) {
    const size_t from = c.scanned >= 3 ? c.scanned - 3 : 0;
    const size_t end = c.in.find("\r\n\r\n", from);
    c.scanned = c.in.size();
    if (end == std::string::npos) return false;
    c.headEnd = end + 4;
    std::string_view head(c.in.data(), end);
    const size_t lineEnd = std::min(head.find("\r\n"), head.size());
    std::string_view statusLine = head.substr(0, lineEnd);
    if (statusLine.size() < 12 || statusLine.substr(0, 7) != "HTTP/1.") {
      fail(c, "bad status line: " + std::string(statusLine.substr(0, 80)));
      return true;
    }
    c.status = std::atoi(std::string(statusLine.substr(9, 3)).c_str());
    c.contentLength = 0;
    c.closeAfter = statusLine.substr(0, 8) == "HTTP/1.0";
    bool haveLength = false;
    size_t pos = lineEnd + 2;
    while (pos < head.size()) {
      size_t next = head.find("\r\n", pos);
      if (next == std::string_view::npos) next = head.size();
      std::string_view line = head.substr(pos, next - pos);
      pos = next + 2;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view name = trim(line.substr(0, colon));
      std::string_view value = trim(line.substr(colon + 1));
      if (iequals(name, "Content-Length")) {
        c.contentLength = static_cast<size_t>(std::strtoull(std::string(value).c_str(), nullptr, 10));
        haveLength = true;
      } else if (iequals(name, "Connection")) {
        c.closeAfter = iequals(value, "close");
      } else if (iequals(name, "Transfer-Encoding")) {
        fail(c, "chunked responses are not supported by this client");
        return true;
      }
    }
    const bool noBody = c.status == 204 || c.status == 304 || (c.status >= 100 && c.status < 200);
    if (!haveLength && !noBody) {
      fail(c, "response " + std::to_string(c.status) + " without Content-Length");
      return true;
    }
    c.in.reserve(c.headEnd + c.contentLength);  // one allocation for a large body
  }
  if (c.in.size() < c.headEnd + c.contentLength) return false;
  const TimePoint doneAt = std::chrono::steady_clock::now();
  if (c.in.size() > c.headEnd + c.contentLength) {
    fail(c, "bytes after the response (the client sends one request at a time)");
    return true;
  }
  LoadResponse r;
  r.status = c.status;
  c.in.erase(0, c.headEnd);
  r.body.swap(c.in);
  r.sentAt = c.sentAt;
  r.doneAt = doneAt;
  if (c.closeAfter) closeFd(c);
  deliver(c, std::move(r));
  return true;
}

// Note [Stale keep-alive connections]: a server may close an idle keep-alive connection just as
// a request goes out on it (ddp::http::Server closes connections idle for idleTimeout). As HTTP
// clients do, a request that got no byte of answer on a reused socket is sent once more on a
// fresh one; sentAt stays that of the first attempt, so the latency includes the reconnect.
void ControllerLoadClient::retryOnFreshSocket(Connection& c) {
  ++retries_;
  c.retried = true;
  c.outOff = 0;
  c.in.clear();
  c.scanned = 0;
  c.headEnd = kNoHead;
  Status st = startConnect(c);
  if (!st.isOk()) fail(c, st.message());
}

void ControllerLoadClient::fail(Connection& c, const std::string& error) {
  closeFd(c);
  if (!c.busy) return;
  LoadResponse r;
  r.error = error;
  r.sentAt = c.sentAt;
  r.doneAt = std::chrono::steady_clock::now();
  deliver(c, std::move(r));
}

void ControllerLoadClient::deliver(Connection& c, LoadResponse response) {
  c.busy = false;
  c.reused = c.fd >= 0;
  --inFlight_;
  c.out.clear();
  c.outOff = 0;
  c.in.clear();
  c.scanned = 0;
  c.headEnd = kNoHead;
  if (onResponse_) onResponse_(c.index, response);
}

void ControllerLoadClient::closeFd(Connection& c) {
  if (c.fd < 0) return;
  ::epoll_ctl(epollFd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  c.fd = -1;
  c.interest = 0;
  if (!c.connecting) --connected_;
  c.connecting = false;
}

Result<LoadResponse> ControllerLoadClient::roundTrip(const std::string& host, int port, std::string request,
                                                     Deadline deadline) {
  ControllerLoadClient client(host, port);
  DDP_RETURN_IF_ERROR(client.init());
  LoadResponse out;
  bool done = false;
  client.setOnResponse([&](int, LoadResponse& r) {
    out = std::move(r);
    done = true;
  });
  DDP_ASSIGN_OR_RETURN(int conn, client.open());
  client.send(conn, std::move(request));
  while (!done && !deadline.expired()) DDP_RETURN_IF_ERROR(client.poll(deadline.at()));
  if (!done) return timeoutError("no answer from " + host + ":" + std::to_string(port) + " before the deadline");
  if (out.status == 0) return unavailable(out.error);
  return out;
}

}  // namespace ddp::bench
