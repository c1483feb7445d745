#include "bench/common/tcp_ring.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace ddp::bench {
namespace {

constexpr size_t kChunk = size_t{1} << 20;

std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void setTimeouts(int fd) {
  timeval tv{60, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A listening socket on 127.0.0.1 and its port.
Result<std::pair<int, int>> listenLoopback(int backlog) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return unavailable(errnoText("socket"));
  sockaddr_in a = loopback(0);
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const Status st = unavailable(errnoText("listen on loopback"));
    ::close(fd);
    return st;
  }
  return std::make_pair(fd, int(ntohs(a.sin_port)));
}

Result<int> connectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return unavailable(errnoText("socket"));
  sockaddr_in a = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    const Status st = unavailable(errnoText("connect to the right neighbour"));
    ::close(fd);
    return st;
  }
  setTimeouts(fd);
  return fd;
}

Result<int> acceptBefore(int listener, Deadline deadline) {
  pollfd p{listener, POLLIN, 0};
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining()).count();
  if (::poll(&p, 1, int(std::max<int64_t>(ms, 0))) <= 0) return unavailable("the left neighbour did not connect in time");
  const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return unavailable(errnoText("accept"));
  setTimeouts(fd);
  return fd;
}

bool sendAll(int fd, const char* buf, size_t bytes) {
  for (size_t done = 0; done < bytes;) {
    const ssize_t n = ::send(fd, buf + (done % kChunk), std::min(kChunk - done % kChunk, bytes - done), MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

bool recvAll(int fd, char* buf, size_t bytes) {
  for (size_t done = 0; done < bytes;) {
    const ssize_t n = ::recv(fd, buf + (done % kChunk), std::min(kChunk - done % kChunk, bytes - done), 0);
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<TcpRing>> TcpRing::connect(comm::Store& store, const std::string& prefix, int rank, int world,
                                                  int streams, Deadline deadline) {
  if (world < 2 || streams < 1) return invalidArgument("TcpRing needs world >= 2 and streams >= 1");
  DDP_ASSIGN_OR_RETURN(auto listening, listenLoopback(streams));
  std::unique_ptr<TcpRing> ring(new TcpRing());
  const int listener = listening.first;
  Status st = store.set(prefix + "/" + std::to_string(rank), std::to_string(listening.second));
  auto right = st.isOk() ? store.get(prefix + "/" + std::to_string((rank + 1) % world), deadline)
                         : Result<std::string>(st);
  // Connect first, then accept: the listen backlog holds the left neighbour's connections.
  for (int s = 0; st.isOk() && right.isOk() && s < streams; ++s) {
    auto fd = connectLoopback(std::atoi(right->c_str()));
    if (fd.isOk()) ring->out_.push_back(*fd); else st = fd.status();
  }
  for (int s = 0; st.isOk() && right.isOk() && s < streams; ++s) {
    auto fd = acceptBefore(listener, deadline);
    if (fd.isOk()) ring->in_.push_back(*fd); else st = fd.status();
  }
  ::close(listener);
  if (!right.isOk()) return right.status();
  if (!st.isOk()) return st;
  ring->sendBuf_.assign(kChunk * streams, 1);
  ring->recvBuf_.assign(kChunk * streams, 0);
  return ring;
}

TcpRing::~TcpRing() {
  for (int fd : out_) ::close(fd);
  for (int fd : in_) ::close(fd);
}

Status TcpRing::move(size_t bytes) {
  const size_t n = out_.size();
  std::vector<char> ok(2 * n, 0);
  std::vector<std::thread> threads;
  for (size_t s = 0; s < n; ++s) {
    const size_t share = bytes / n + (s + 1 == n ? bytes % n : 0);
    threads.emplace_back([&, s, share] { ok[s] = sendAll(out_[s], sendBuf_.data() + s * kChunk, share); });
    threads.emplace_back([&, s, share] { ok[n + s] = recvAll(in_[s], recvBuf_.data() + s * kChunk, share); });
  }
  for (auto& t : threads) t.join();
  if (std::count(ok.begin(), ok.end(), 0) != 0) return unavailable("loopback TCP ring: a send or receive failed or timed out");
  return Status::ok();
}

}  // namespace ddp::bench
