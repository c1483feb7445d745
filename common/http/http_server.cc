#include "common/http/http_server.h"

#include <cerrno>
#include <cstring>
#include <thread>

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/http/http_event_loop.h"
#include "common/http/http_handler_pool.h"
#include "common/http/http_outbox.h"
#include "common/log.h"

namespace ddp::http {

namespace {

std::string hostPort(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// A bound, listening, non-blocking socket on host:port (port 0: any free port).
Result<int> listenOn(const std::string& host, int port, int backlog) {
  const std::string where = hostPort(host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return unavailable("http server cannot resolve " + where + ": " + ::gai_strerror(rc));
  }
  std::string lastError = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      lastError = std::strerror(errno);
      continue;
    }
    const int one = 1;
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, backlog) != 0) {
      lastError = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return unavailable("http server cannot listen on " + where + ": " + lastError);
  return fd;
}

int boundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return -1;
}

}  // namespace

Status ServerOptions::validate() const {
  const std::string what = "http server options: ";
  if (host.empty()) return invalidArgument(what + "host is empty");
  if (port < 0 || port > 65535) return invalidArgument(what + "port " + std::to_string(port) + " out of range");
  if (maxConnections == 0) return invalidArgument(what + "maxConnections must be > 0");
  if (maxHeaderBytes < 64) return invalidArgument(what + "maxHeaderBytes must be >= 64");
  if (idleTimeout <= Duration::zero()) return invalidArgument(what + "idleTimeout must be > 0");
  if (requestTimeout <= Duration::zero()) return invalidArgument(what + "requestTimeout must be > 0");
  if (handlerThreads < 1) return invalidArgument(what + "handlerThreads must be >= 1");
  if (listenBacklog < 1) return invalidArgument(what + "listenBacklog must be >= 1");
  return Status::ok();
}

struct Server::Impl {
  ServerOptions options;
  Handler handler;
  std::mutex mu;              // serialises start() and stop()
  bool used = false;          // guarded by mu: start() was called once
  bool started = false;       // guarded by mu
  std::atomic<int> port{-1};
  int listenFd = -1;          // guarded by mu
  std::shared_ptr<detail::Outbox> outbox;
  std::unique_ptr<detail::HandlerPool> pool;
  std::unique_ptr<detail::EventLoop> loop;
  std::thread loopThread;
  std::atomic<bool> running{false};
  std::atomic<size_t> connections{0};  // maintained by the loop
};

Server::Server(ServerOptions options, Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->handler = std::move(handler);
}

Server::~Server() { stop(); }

Status Server::start() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (m.used) return failedPrecondition("http server on " + address() + " was already started (servers are not restartable)");
  DDP_RETURN_IF_ERROR(m.options.validate());
  if (!m.handler) return invalidArgument("http server: no handler");
  m.used = true;
  DDP_ASSIGN_OR_RETURN(m.listenFd, listenOn(m.options.host, m.options.port, m.options.listenBacklog));
  m.port = boundPort(m.listenFd);
  auto outbox = detail::Outbox::create();
  if (!outbox.isOk()) {
    ::close(m.listenFd);
    m.listenFd = -1;
    return outbox.status();
  }
  m.outbox = *outbox;
  m.pool = std::make_unique<detail::HandlerPool>(m.options.handlerThreads, m.handler);
  m.loop = std::make_unique<detail::EventLoop>(m.options, m.listenFd, m.outbox, *m.pool, m.connections);
  if (Status st = m.loop->init(); !st.isOk()) {
    m.loop.reset();
    m.pool.reset();
    ::close(m.listenFd);
    m.listenFd = -1;
    return st;
  }
  m.pool->start();
  m.loopThread = std::thread([&m] { m.loop->run(); });
  m.started = true;
  m.running = true;
  return Status::ok();
}

void Server::stop() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (!m.started) return;
  DDP_CHECK(!m.pool->onPoolThread());  // a handler cannot join its own pool
  m.running = false;
  m.outbox->stop();       // Responders refuse from now on
  m.loop->requestStop();  // closes every connection: pending Responders become closed()
  m.loopThread.join();
  m.pool->stop();         // waits for running handlers, drops queued requests
  ::close(m.listenFd);
  m.listenFd = -1;
  m.loop.reset();
  m.pool.reset();
  m.started = false;
}

bool Server::running() const { return impl_->running.load(); }
int Server::port() const { return impl_->port.load(); }
std::string Server::address() const { return hostPort(impl_->options.host, impl_->port.load()); }
size_t Server::connectionCount() const { return impl_->connections.load(); }

}  // namespace ddp::http
