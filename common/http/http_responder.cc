// Responder: one request's reply handle (declared in http_server.h).
#include <cstdio>

#include "common/http/http_outbox.h"
#include "common/http/http_server.h"

namespace ddp::http {

Responder::Responder(std::shared_ptr<detail::Outbox> outbox, uint64_t connection, int versionMinor,
                     bool keepAlive)
    : outbox_(std::move(outbox)), connection_(connection), versionMinor_(versionMinor), keepAlive_(keepAlive) {}

Responder::~Responder() {
  // No lock needed: nobody else holds a reference any more.
  if (closed_.load()) return;
  if (state_ == State::kFresh) {
    bool close = !keepAlive_;
    outbox_->push({connection_,
                   detail::serializeResponse(Response::jsonError(500, "the handler dropped the request without replying"), &close),
                   true, close});
  } else if (state_ == State::kStreaming) {
    outbox_->push({connection_, "", true, true});  // cut off: the client sees an incomplete body
  }
}

bool Responder::push(std::string bytes, bool final, bool close) {
  if (closed_.load()) return false;
  return outbox_->push({connection_, std::move(bytes), final, close});
}

bool Responder::reply(Response response) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != State::kFresh) return false;
  state_ = State::kDone;
  onClose_ = nullptr;
  // Before the bytes go: a client that saw the answer also sees what the callback recorded.
  if (auto answered = std::move(onAnswer_)) answered(response.status);
  bool close = !keepAlive_;
  std::string bytes = detail::serializeResponse(response, &close);
  return push(std::move(bytes), true, close);
}

bool Responder::startStream(int status, std::string contentType, HeaderList headers) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != State::kFresh) return false;
  state_ = State::kStreaming;
  if (auto answered = std::move(onAnswer_)) answered(status);
  bool close = !keepAlive_;
  std::string head = detail::serializeStreamHead(status, contentType, headers, versionMinor_ >= 1, &close);
  closeAfterStream_ = close;
  return push(std::move(head), false, false);
}

void Responder::onAnswer(std::function<void(int status)> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::kFresh) onAnswer_ = std::move(callback);
}

bool Responder::write(std::string_view chunk) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != State::kStreaming) return false;
  if (chunk.empty()) return !closed();
  std::string bytes;
  if (versionMinor_ >= 1) {
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
    bytes.reserve(chunk.size() + 24);
    bytes += size;
    bytes += chunk;
    bytes += "\r\n";
  } else {
    bytes = std::string(chunk);
  }
  return push(std::move(bytes), false, false);
}

void Responder::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != State::kStreaming) return;
  state_ = State::kDone;
  onClose_ = nullptr;
  (void)push(versionMinor_ >= 1 ? "0\r\n\r\n" : "", true, closeAfterStream_);
}

bool Responder::closed() const { return closed_.load() || outbox_->stopped(); }

bool Responder::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_ == State::kDone;
}

void Responder::onClose(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == State::kDone) return;
    if (!closed_.load()) {
      onClose_ = std::move(callback);
      return;
    }
  }
  if (callback) callback();
}

void Responder::markClosed() {
  std::function<void()> callback;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    callback = std::move(onClose_);
    onClose_ = nullptr;
  }
  if (callback) callback();
}

}  // namespace ddp::http
