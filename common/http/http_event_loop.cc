#include "common/http/http_event_loop.h"

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/http/http_request_parser.h"
#include "common/log.h"

namespace ddp::http::detail {

// Note [Event loop server]
// One thread owns every socket: a level-triggered epoll set holds the listening socket, an
// eventfd (the Outbox's) and every connection. A connection cycles through phases:
//   kHead      reading a request head (idle when nothing of a request has arrived yet)
//   kBody      reading a Content-Length body (the limit is checked before any body byte is read)
//   kHandling  the request is on a handler thread, or its reply is being written; the socket is
//              still read, so that a client that goes away (EOF) closes the connection and marks
//              its Responder closed(); bytes of pipelined requests are kept for later (reading
//              pauses past a bound, leaving the rest in the kernel)
//   kLingering after a reply with Connection: close: our side is shut down and the rest of what
//              the client sends is read and dropped until it closes or a short linger passes, so
//              an early error reply (413 before the body) is not lost to a TCP reset
// A handler replies through its Responder from any thread: the bytes go into the Outbox, whose
// push onto an empty queue writes the eventfd; the loop drains the whole queue at once and
// writes each connection's bytes (EPOLLOUT only while output is pending). Once the final bytes
// of a reply are written the connection goes back to kHead and parses what it already buffered.
// Nothing blocks the loop except the (quick) bodyLimit hook and onClose callbacks, so a request
// that waits costs one Connection and one Responder, never a thread.
// Timers: every 100 ms the loop checks each connection's clock: idleTimeout for idle keep-alive
// connections, requestTimeout for a request still arriving (408) or a reply the client stopped
// reading, the linger bound. At maxConnections an accept closes the longest idle connection
// (the idle_ list keeps them in order); with none idle the new connection gets 503.
// Connections closed during an iteration are only marked dead and destroyed at its end, so
// nothing in the iteration holds a dangling reference; ids are never reused, so a late reply
// for a closed connection finds nothing and is dropped.

namespace {

constexpr uint64_t kListenId = 1;
constexpr uint64_t kWakeId = 2;
constexpr Duration kTick = std::chrono::milliseconds(100);
constexpr Duration kLinger = std::chrono::seconds(2);
constexpr size_t kReadChunk = 64 << 10;
constexpr int kMaxEvents = 256;
constexpr int kMaxAcceptsPerWake = 1024;
constexpr size_t kCompactOutputBytes = 1 << 20;

std::string peerAddress(const sockaddr_storage& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (a.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (a.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "?";
}

}  // namespace

struct EventLoop::Connection {
  uint64_t id = 0;
  int fd = -1;
  std::string remote;
  std::string host;          // remote without the port: its ClientConnectionLimit key
  Phase phase = Phase::kHead;
  std::string in;            // received, not yet consumed
  size_t scanFrom = 0;       // parseRequestHead's resume point
  Request request;           // kBody: the parsed head
  uint64_t bodyLength = 0;
  bool keepAlive = true;
  std::string out;           // to send, from outOffset on
  size_t outOffset = 0;
  bool finalQueued = false;  // the whole reply is in `out`
  bool closeAfter = false;   // close once the reply is written
  bool readPaused = false;   // kHandling: stopped reading (pipelined bytes past the bound, or EOF)
  bool requestStarted = false;
  bool dead = false;
  TimePoint lastActivity{};
  TimePoint requestStart{};
  TimePoint lastWrite{};
  TimePoint lingerUntil{};
  std::weak_ptr<Responder> responder;
  uint32_t interest = 0;
  bool idle = false;
  std::list<uint64_t>::iterator idleIt;

  bool outPending() const { return outOffset < out.size(); }
};

EventLoop::EventLoop(const ServerOptions& options, int listenFd, std::shared_ptr<Outbox> outbox, HandlerPool& pool,
                     std::atomic<size_t>& live)
    : options_(options),
      listenFd_(listenFd),
      outbox_(std::move(outbox)),
      pool_(pool),
      live_(live),
      perClient_(options.maxConnectionsPerClient) {}

EventLoop::~EventLoop() {
  for (auto& [id, c] : connections_) {
    if (!c->dead) ::close(c->fd);
  }
  if (epollFd_ >= 0) ::close(epollFd_);
}

Status EventLoop::init() {
  epollFd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epollFd_ < 0) return unavailable(std::string("http server: epoll_create1 failed: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  if (::epoll_ctl(epollFd_, EPOLL_CTL_ADD, listenFd_, &ev) != 0) {
    return unavailable(std::string("http server: epoll_ctl(listen) failed: ") + std::strerror(errno));
  }
  ev.data.u64 = kWakeId;
  if (::epoll_ctl(epollFd_, EPOLL_CTL_ADD, outbox_->fd(), &ev) != 0) {
    return unavailable(std::string("http server: epoll_ctl(eventfd) failed: ") + std::strerror(errno));
  }
  return Status::ok();
}

void EventLoop::requestStop() {
  stopRequested_ = true;
  outbox_->wake();
}

void EventLoop::run() {
  std::vector<epoll_event> events(kMaxEvents);
  const Clock& clock = SystemClock::instance();
  TimePoint nextTick = clock.now() + kTick;
  while (!stopRequested_.load()) {
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(nextTick - clock.now()).count();
    const int n = ::epoll_wait(epollFd_, events.data(), kMaxEvents, static_cast<int>(std::max<int64_t>(0, wait)));
    if (n < 0 && errno != EINTR) {
      DDP_LOG(Error) << "http server: epoll_wait failed: " << std::strerror(errno);
      break;
    }
    const TimePoint now = clock.now();
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kListenId) {
        acceptAll(now);
      } else if (id == kWakeId) {
        drainOutbox(now);
      } else if (Connection* c = find(id)) {
        onEvents(*c, events[i].events, now);
      }
    }
    if (now >= nextTick) {
      sweep(now);
      nextTick = now + kTick;
    }
    buryDead();
  }
  for (auto& [id, c] : connections_) closeConnection(*c);
  buryDead();
}

EventLoop::Connection* EventLoop::find(uint64_t id) {
  auto it = connections_.find(id);
  return it == connections_.end() || it->second->dead ? nullptr : it->second.get();
}

void EventLoop::acceptAll(TimePoint now) {
  for (int i = 0; i < kMaxAcceptsPerWake; ++i) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int fd = ::accept4(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors or memory: stop watching the listening socket until the next tick
      // instead of spinning on it; pending connections wait in the backlog.
      DDP_LOG(Warning) << "http server: accept failed: " << std::strerror(errno) << " (retrying in 100 ms)";
      (void)::epoll_ctl(epollFd_, EPOLL_CTL_DEL, listenFd_, nullptr);
      listenPaused_ = true;
      return;
    }
    std::string remote = peerAddress(addr);
    std::string host(hostOfRemote(remote));
    if (!perClient_.admit(host)) {
      refuse(fd, "too many connections from " + host + " (at most " +
                     std::to_string(options_.maxConnectionsPerClient) + " per client address)",
             "per_client");
      continue;
    }
    if (live_.load() >= options_.maxConnections && !evictIdle()) {
      perClient_.release(host);
      refuse(fd, "server at its limit of " + std::to_string(options_.maxConnections) + " connections, none idle",
             "capacity");
      continue;
    }
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Connection>();
    c->id = nextId_++;
    c->fd = fd;
    c->remote = std::move(remote);
    c->host = std::move(host);
    c->interest = EPOLLIN;
    epoll_event ev{};
    ev.events = c->interest;
    ev.data.u64 = c->id;
    if (::epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      perClient_.release(c->host);
      ::close(fd);
      continue;
    }
    Connection& ref = *c;
    connections_.emplace(ref.id, std::move(c));
    ++live_;
    becomeIdle(ref, now);
  }
}

void EventLoop::refuse(int fd, const std::string& why, const char* reason) {
  dropped(reason);  // counted before the client can read the answer
  bool close = true;
  const std::string bytes = serializeResponse(Response::jsonError(503, why), &close);
  (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
}

void EventLoop::dropped(const char* reason) const {
  if (options_.onDropped) options_.onDropped(reason);
}

bool EventLoop::evictIdle() {
  while (!idle_.empty()) {
    Connection* c = find(idle_.front());
    if (c == nullptr) {
      idle_.pop_front();
      continue;
    }
    closeConnection(*c);
    return true;
  }
  return false;
}

void EventLoop::onEvents(Connection& c, uint32_t events, TimePoint now) {
  if (events & (EPOLLERR | EPOLLHUP)) {  // reset, or both directions shut
    closeConnection(c);
    return;
  }
  if (events & EPOLLOUT) {
    flush(c, now);
    if (c.dead) return;
  }
  if (events & EPOLLIN) onReadable(c, now);
}

void EventLoop::onReadable(Connection& c, TimePoint now) {
  static thread_local std::vector<char> buf(kReadChunk);
  const ssize_t n = ::recv(c.fd, buf.data(), buf.size(), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n == 0 && c.phase == Phase::kHandling && c.finalQueued) {
    // The client shut its sending side after its request: the reply already queued is still
    // written, then the connection closes.
    c.readPaused = true;
    c.closeAfter = true;
    updateInterest(c);
    return;
  }
  if (n <= 0) {
    // The client closed (a partial request is dropped), or went away while its request was in
    // flight (a client that half-closes and still waits for its answer is not supported), or the
    // socket failed.
    closeConnection(c);
    return;
  }
  if (c.phase == Phase::kLingering) return;  // dropped
  c.in.append(buf.data(), static_cast<size_t>(n));
  c.lastActivity = now;
  if (c.phase != Phase::kHandling) return process(c, now);
  // Pipelined bytes while a request is in flight wait in `in`, up to a bound.
  if (c.in.size() >= std::max<size_t>(options_.maxHeaderBytes, kReadChunk)) {
    c.readPaused = true;
    updateInterest(c);
  }
}

void EventLoop::process(Connection& c, TimePoint now) {
  if (c.phase == Phase::kHead) {
    if (c.scanFrom == 0) {  // blank lines before a request line are ignored (RFC 9112 2.2)
      size_t skip = 0;
      while (skip < c.in.size() && (c.in[skip] == '\r' || c.in[skip] == '\n')) ++skip;
      c.in.erase(0, skip);
    }
    if (c.in.empty()) {
      if (!c.requestStarted && !c.idle) becomeIdle(c, now);
      updateInterest(c);
      return;
    }
    if (!c.requestStarted) {
      c.requestStarted = true;
      c.requestStart = now;
      leaveIdle(c);
    }
    HeadParse p = parseRequestHead(c.in, &c.scanFrom, options_.maxHeaderBytes);
    if (p.kind == HeadParse::Kind::kNeedMore) {
      updateInterest(c);
      return;
    }
    if (p.kind == HeadParse::Kind::kError) return fail(c, p.status, p.reason);
    c.request = std::move(p.request);
    c.in.erase(0, p.headBytes);
    c.scanFrom = 0;
    if (!startBody(c, now)) return;
  }
  if (c.phase == Phase::kBody) {
    if (c.in.size() < c.bodyLength) {
      updateInterest(c);
      return;
    }
    if (c.in.size() == c.bodyLength) {
      c.request.body = std::move(c.in);
      c.in.clear();
    } else {
      c.request.body.assign(c.in, 0, c.bodyLength);
      c.in.erase(0, c.bodyLength);
    }
    dispatch(c);
  }
  updateInterest(c);
}

bool EventLoop::startBody(Connection& c, TimePoint now) {
  const BodyFraming f = bodyFraming(c.request);
  if (f.status != 0) {
    fail(c, f.status, f.reason);
    return false;
  }
  const size_t limit = options_.bodyLimit ? options_.bodyLimit(c.request) : options_.maxBodyBytes;
  if (f.contentLength > limit) {
    fail(c, 413, "request body of " + std::to_string(f.contentLength) + " bytes exceeds the limit of " +
                     std::to_string(limit) + " bytes");
    return false;
  }
  c.keepAlive = f.keepAlive;
  c.bodyLength = f.contentLength;
  c.request.remoteAddress = c.remote;
  c.phase = Phase::kBody;
  if (c.bodyLength > c.in.size()) {
    c.in.reserve(c.bodyLength);
    if (f.expectContinue) {
      c.out += "HTTP/1.1 100 Continue\r\n\r\n";
      c.lastWrite = now;
      flush(c, now);
      if (c.dead) return false;
    }
  }
  return true;
}

void EventLoop::dispatch(Connection& c) {
  c.phase = Phase::kHandling;
  c.finalQueued = false;
  c.closeAfter = !c.keepAlive;
  c.readPaused = false;
  auto responder = std::make_shared<Responder>(outbox_, c.id, c.request.versionMinor, c.keepAlive);
  c.responder = responder;
  if (options_.runInline && options_.runInline(c.request)) {
    Request request = std::move(c.request);
    c.request = Request{};
    runHandler(pool_.handler(), request, responder);  // may reply at once: the outbox takes it
    return;
  }
  pool_.post({std::move(c.request), std::move(responder)});
  c.request = Request{};
}

void EventLoop::fail(Connection& c, int status, const std::string& reason) {
  dropped(status == 408 ? "timeout" : "malformed");
  leaveIdle(c);
  bool close = true;
  if (c.out.empty()) c.lastWrite = SystemClock::instance().now();
  c.out += serializeResponse(Response::jsonError(status, reason), &close);
  c.in.clear();
  c.phase = Phase::kHandling;
  c.finalQueued = true;
  c.closeAfter = true;
  flush(c, SystemClock::instance().now());
}

void EventLoop::flush(Connection& c, TimePoint now) {
  while (c.outPending()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.outOffset, c.out.size() - c.outOffset, MSG_NOSIGNAL);
    if (n > 0) {
      c.outOffset += static_cast<size_t>(n);
      c.lastWrite = now;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    closeConnection(c);  // the client is gone
    return;
  }
  if (!c.outPending()) {
    c.out.clear();
    c.outOffset = 0;
    if (c.finalQueued) return completeExchange(c, now);
  } else if (c.outOffset > kCompactOutputBytes && c.outOffset * 2 > c.out.size()) {
    c.out.erase(0, c.outOffset);
    c.outOffset = 0;
  }
  updateInterest(c);
}

void EventLoop::completeExchange(Connection& c, TimePoint now) {
  c.finalQueued = false;
  c.responder.reset();
  if (c.closeAfter) return startLinger(c, now);
  c.phase = Phase::kHead;
  c.requestStarted = false;
  c.scanFrom = 0;
  c.lastActivity = now;
  process(c, now);  // a pipelined request may be buffered already
}

void EventLoop::startLinger(Connection& c, TimePoint now) {
  leaveIdle(c);
  (void)::shutdown(c.fd, SHUT_WR);
  c.phase = Phase::kLingering;
  c.in.clear();
  c.in.shrink_to_fit();
  c.lingerUntil = now + std::min<Duration>(kLinger, options_.requestTimeout);
  updateInterest(c);
}

void EventLoop::closeConnection(Connection& c) {
  if (c.dead) return;
  c.dead = true;
  leaveIdle(c);
  perClient_.release(c.host);
  ::close(c.fd);  // also leaves the epoll set
  --live_;
  dead_.push_back(c.id);
  if (auto r = c.responder.lock()) {
    c.responder.reset();
    r->markClosed();
  }
}

void EventLoop::updateInterest(Connection& c) {
  if (c.dead) return;
  uint32_t want = 0;
  switch (c.phase) {
    case Phase::kHead:
    case Phase::kBody:
    case Phase::kLingering: want = EPOLLIN; break;
    case Phase::kHandling: want = c.readPaused ? 0 : EPOLLIN; break;
  }
  if (c.outPending()) want |= EPOLLOUT;
  if (want == c.interest) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = c.id;
  if (::epoll_ctl(epollFd_, EPOLL_CTL_MOD, c.fd, &ev) != 0) return closeConnection(c);
  c.interest = want;
}

void EventLoop::becomeIdle(Connection& c, TimePoint now) {
  if (c.idle) return;
  c.lastActivity = now;
  c.idle = true;
  c.idleIt = idle_.insert(idle_.end(), c.id);
}

void EventLoop::leaveIdle(Connection& c) {
  if (!c.idle) return;
  idle_.erase(c.idleIt);
  c.idle = false;
}

void EventLoop::drainOutbox(TimePoint now) {
  for (OutboxItem& item : outbox_->drain()) {
    Connection* c = find(item.connection);
    if (c == nullptr || c->phase != Phase::kHandling || c->finalQueued) continue;  // gone or stale
    if (c->out.empty()) {
      c->out = std::move(item.bytes);
      c->lastWrite = now;
    } else {
      c->out += item.bytes;
    }
    if (item.final) {
      c->finalQueued = true;
      c->closeAfter = c->closeAfter || item.close;
    }
    flush(*c, now);
  }
}

void EventLoop::sweep(TimePoint now) {
  if (listenPaused_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenId;
    if (::epoll_ctl(epollFd_, EPOLL_CTL_ADD, listenFd_, &ev) == 0) listenPaused_ = false;
  }
  for (auto& [id, cp] : connections_) {
    Connection& c = *cp;
    if (c.dead) continue;
    switch (c.phase) {
      case Phase::kHead:
        if (!c.requestStarted) {
          if (now - c.lastActivity >= options_.idleTimeout) closeConnection(c);
          break;
        }
        [[fallthrough]];
      case Phase::kBody:
        if (now - c.requestStart >= options_.requestTimeout) {
          fail(c, 408, "request not received completely within " + formatDuration(options_.requestTimeout));
        }
        break;
      case Phase::kHandling:
        if (c.outPending() && now - c.lastWrite >= options_.requestTimeout) closeConnection(c);  // not reading
        break;
      case Phase::kLingering:
        if (now >= c.lingerUntil) closeConnection(c);
        break;
    }
  }
}

void EventLoop::buryDead() {
  for (uint64_t id : dead_) connections_.erase(id);
  dead_.clear();
}

}  // namespace ddp::http::detail
