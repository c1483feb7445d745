#include "worker/comm/gloo_wait_set.h"

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

namespace ddp::comm {

void GlooWaitSet::Unregister::operator()(::gloo::transport::UnboundBuffer* b) const {
  if (set != nullptr) set->remove(b);
  delete b;
}

GlooWaitSet::Buffer GlooWaitSet::create(::gloo::Context& context, void* data, size_t bytes) {
  std::unique_ptr<::gloo::transport::UnboundBuffer> b = context.createUnboundBuffer(data, bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) throw ::gloo::IoException("communicator aborted");
  live_.insert(b.get());
  return Buffer(b.release(), Unregister{this});
}

void GlooWaitSet::abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  for (::gloo::transport::UnboundBuffer* b : live_) {
    b->abortWaitSend();
    b->abortWaitRecv();
  }
  for (const auto& wake : wakes_) wake();
}

void GlooWaitSet::onAbort(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) {
    wake();
    return;
  }
  wakes_.push_back(std::move(wake));
}

bool GlooWaitSet::aborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

size_t GlooWaitSet::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size();
}

void GlooWaitSet::remove(::gloo::transport::UnboundBuffer* b) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(b);
}

}  // namespace ddp::comm
