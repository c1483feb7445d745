#pragma once
// A byte-exact HTTP/1.1 test client over a blocking loopback TCP socket, for requests a real
// client would never send (malformed heads, half-sent requests, pipelining, idle connections).
// Every read waits at most its timeout (poll), so a broken server fails the test instead of
// hanging it.
// Thread model: one RawConnection per thread.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace ddp::http::testing {

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string header(const std::string& lowerName) const {
    auto it = headers.find(lowerName);
    return it == headers.end() ? "" : it->second;
  }
};

// Raises the soft descriptor limit to the hard one (tests that open hundreds of sockets).
inline void raiseFdLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &r);
  }
}

class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Shuts our sending side (the server sees EOF / EPOLLRDHUP).
  void shutdownWrite() { (void)::shutdown(fd_, SHUT_WR); }

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // One response: head, then a Content-Length or chunked body (or, with neither, up to EOF).
  std::optional<RawResponse> readResponse(Duration timeout = std::chrono::seconds(5)) {
    const Deadline deadline = Deadline::after(timeout);
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!readMore(deadline)) return std::nullopt;
    }
    RawResponse r;
    const std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    if (head.size() < 12 || head.compare(0, 5, "HTTP/") != 0) return std::nullopt;
    r.status = std::stoi(head.substr(9, 3));
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos) {
      const size_t next = head.find("\r\n", pos + 2);
      const std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        size_t v = colon + 1;
        while (v < line.size() && line[v] == ' ') ++v;
        r.headers[name] = line.substr(v);
      }
      pos = next;
    }
    if (r.status == 100) return r;
    if (r.headers.count("content-length")) {
      const size_t n = std::stoul(r.headers["content-length"]);
      while (buf_.size() < n) {
        if (!readMore(deadline)) return std::nullopt;
      }
      r.body = buf_.substr(0, n);
      buf_.erase(0, n);
    } else if (r.header("transfer-encoding") == "chunked") {
      while (true) {
        size_t crlf;
        while ((crlf = buf_.find("\r\n")) == std::string::npos) {
          if (!readMore(deadline)) return std::nullopt;
        }
        const size_t n = std::stoul(buf_.substr(0, crlf), nullptr, 16);
        while (buf_.size() < crlf + 2 + n + 2) {
          if (!readMore(deadline)) return std::nullopt;
        }
        r.body += buf_.substr(crlf + 2, n);
        buf_.erase(0, crlf + 2 + n + 2);
        if (n == 0) break;
      }
    } else {
      while (readMore(deadline)) {
      }
      r.body = std::move(buf_);
      buf_.clear();
    }
    return r;
  }

  // True once the server closed the connection (EOF or reset) within `timeout`; received bytes
  // are kept for readResponse().
  bool waitForClose(Duration timeout = std::chrono::seconds(5)) {
    const Deadline deadline = Deadline::after(timeout);
    while (readMore(deadline)) {
    }
    return eof_;
  }

 private:
  // Appends what arrives before `deadline`; false on EOF, error or timeout.
  bool readMore(Deadline deadline) {
    if (fd_ < 0 || eof_) return false;
    pollfd p{fd_, POLLIN, 0};
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining()).count();
    if (::poll(&p, 1, static_cast<int>(ms)) <= 0) return false;
    char tmp[65536];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool eof_ = false;
  std::string buf_;
};

}  // namespace ddp::http::testing
