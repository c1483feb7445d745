#include "common/http/http_client_limits.h"

namespace ddp::http::detail {

bool ClientConnectionLimit::admit(const std::string& host) {
  if (perClient_ == 0) return true;
  size_t& n = counts_[host];
  if (n >= perClient_) return false;
  ++n;
  return true;
}

void ClientConnectionLimit::release(const std::string& host) {
  if (perClient_ == 0) return;
  auto it = counts_.find(host);
  if (it == counts_.end()) return;
  if (--it->second == 0) counts_.erase(it);
}

size_t ClientConnectionLimit::count(const std::string& host) const {
  auto it = counts_.find(host);
  return it == counts_.end() ? 0 : it->second;
}

std::string_view hostOfRemote(std::string_view remote) {
  const size_t colon = remote.rfind(':');
  return colon == std::string_view::npos ? remote : remote.substr(0, colon);
}

}  // namespace ddp::http::detail
