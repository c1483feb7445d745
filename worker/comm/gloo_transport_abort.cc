#include "worker/comm/gloo_transport_abort.h"

#include <gloo/context.h>
#include <gloo/transport/context.h>

#include <cstring>
#include <exception>
#include <typeinfo>

// Note [Reaching the transport context]
// Gloo's TCP transport context has exactly the abort primitive we need:
// tcp::Context::signalException(msg) sets an IoException on every pair, wakes every thread
// waiting on one of the pairs' pending unbound-buffer sends/recvs, and moves the pairs to
// CLOSED (closing the sockets, so peers see "connection closed" and fail too). Gloo's own
// waitRecv timeout path uses it. It is a protected, exported, non-virtual member, and the
// Debian package of Gloo lacks gloo/common/memory.h, which gloo/transport/tcp/context.h needs,
// so the TCP headers cannot be included. This file therefore declares just that member on an
// opaque class of the same name (the only declaration of gloo::transport::tcp::Context in our
// code) and calls the library's symbol, after checking with RTTI that the object really is a
// tcp::Context (its transport::Context base is the first base, at offset 0).
// The transport context itself sits in gloo::Context's protected `transportContext_`, reached
// through a pointer to member named via a derived class (never instantiated).
namespace gloo::transport::tcp {
class Context {
 public:
  void signalException(const std::string& msg);
};
}  // namespace gloo::transport::tcp

namespace ddp::comm {
namespace {

struct GlooContextAccess : ::gloo::Context {
  static std::shared_ptr<::gloo::transport::Context> transport(::gloo::Context& c) {
    return c.*(&GlooContextAccess::transportContext_);
  }
};

constexpr const char* kTcpContextTypeName = "N4gloo9transport3tcp7ContextE";

}  // namespace

bool signalGlooTransport(::gloo::Context& context, const std::string& message) {
  std::shared_ptr<::gloo::transport::Context> transport = GlooContextAccess::transport(context);
  bool signalled = false;
  if (transport && std::strcmp(typeid(*transport).name(), kTcpContextTypeName) == 0) {
    try {
      reinterpret_cast<::gloo::transport::tcp::Context*>(transport.get())->signalException(message);
      signalled = true;
    } catch (const std::exception&) {
      // A pair already failed: fall through to closing.
    }
  }
  try {
    context.closeConnections();
  } catch (const std::exception&) {
  }
  return signalled;
}

}  // namespace ddp::comm
