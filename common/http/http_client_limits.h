#pragma once
// ClientConnectionLimit: how many connections each client address holds on one listener, and
// whether one more may be admitted (ServerOptions::maxConnectionsPerClient). On the public
// listener it keeps one address from taking the whole connection budget with half-sent requests
// (Note [Two listeners] in controller/service/controller.cc); the worker listener has none, as it
// serves thousands of workers from few addresses.
// Thread model: not thread-safe; the event loop's thread only.

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ddp::http::detail {

class ClientConnectionLimit {
 public:
  // `perClient` 0: no limit (admit() always true, nothing counted).
  explicit ClientConnectionLimit(size_t perClient) : perClient_(perClient) {}
  // Counts one more connection of `host` and returns true, or returns false (nothing counted)
  // when `host` already holds `perClient`.
  bool admit(const std::string& host);
  // The end of a connection admit() counted.
  void release(const std::string& host);
  size_t count(const std::string& host) const;
  size_t clients() const { return counts_.size(); }

 private:
  size_t perClient_;
  std::unordered_map<std::string, size_t> counts_;
};

// The host part of "host:port" or "[v6]:port" (the address without the port).
std::string_view hostOfRemote(std::string_view remote);

}  // namespace ddp::http::detail
