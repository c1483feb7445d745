#include "common/http/http_outbox.h"

#include <cerrno>
#include <cstring>

#include <sys/eventfd.h>
#include <unistd.h>

namespace ddp::http::detail {

namespace {

std::string clean(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return out;
}

std::string statusLine(int status) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reasonPhrase(status) + "\r\n";
}

// Appends the user's headers, dropping the ones the server owns.
void appendHeaders(std::string* out, const HeaderList& headers, bool* close) {
  for (const auto& [name, value] : headers) {
    if (equalsIgnoreCase(name, "Connection")) {
      if (headerHasToken(value, "close")) *close = true;
      continue;
    }
    if (equalsIgnoreCase(name, "Content-Length") || equalsIgnoreCase(name, "Transfer-Encoding")) continue;
    *out += clean(name) + ": " + clean(value) + "\r\n";
  }
}

}  // namespace

Result<std::shared_ptr<Outbox>> Outbox::create() {
  const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return unavailable(std::string("http server: eventfd failed: ") + std::strerror(errno));
  return std::make_shared<Outbox>(fd);
}

Outbox::~Outbox() { ::close(eventFd_); }

bool Outbox::push(OutboxItem item) {
  bool wasEmpty = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return false;
    wasEmpty = items_.empty();
    items_.push_back(std::move(item));
  }
  // The loop drains everything it finds, so only the push onto an empty queue needs to wake it.
  if (wasEmpty) wake();
  return true;
}

std::vector<OutboxItem> Outbox::drain() {
  uint64_t counter = 0;
  (void)!::read(eventFd_, &counter, sizeof counter);  // EAGAIN when nothing was signalled
  std::vector<OutboxItem> out;
  std::lock_guard<std::mutex> lock(mu_);
  out.swap(items_);
  return out;
}

void Outbox::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    items_.clear();
  }
  wake();
}

bool Outbox::stopped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

void Outbox::wake() const {
  const uint64_t one = 1;
  (void)!::write(eventFd_, &one, sizeof one);  // only fails when the counter would overflow
}

std::string serializeResponse(const Response& r, bool* close) {
  std::string head = statusLine(r.status);
  if (!r.contentType.empty()) head += "Content-Type: " + clean(r.contentType) + "\r\n";
  appendHeaders(&head, r.headers, close);
  head += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  if (*close) head += "Connection: close\r\n";
  head += "\r\n";
  std::string out;
  out.reserve(head.size() + r.body.size());
  out += head;
  out += r.body;
  return out;
}

std::string serializeStreamHead(int status, const std::string& contentType, const HeaderList& headers,
                                bool chunked, bool* close) {
  std::string head = statusLine(status);
  if (!contentType.empty()) head += "Content-Type: " + clean(contentType) + "\r\n";
  appendHeaders(&head, headers, close);
  if (chunked) {
    head += "Transfer-Encoding: chunked\r\n";
  } else {
    *close = true;  // HTTP/1.0: the close ends the body
  }
  if (*close) head += "Connection: close\r\n";
  head += "\r\n";
  return head;
}

}  // namespace ddp::http::detail
