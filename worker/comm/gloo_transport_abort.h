#pragma once
// Fails every pair of a connected Gloo context from any thread, waking the Gloo waits of this
// rank and closing the sockets so peers' waits fail too (see Note [Reaching the transport
// context] in the .cc). Used by GlooBackend::abort.
// Thread model: callable from any thread, concurrently with ops running on the context.

#include <string>

namespace gloo {
class Context;
}

namespace ddp::comm {

// Returns false when the context's transport is not Gloo's TCP transport (then only
// closeConnections() was done, which closes sockets but may not wake local waits).
bool signalGlooTransport(::gloo::Context& context, const std::string& message);

}  // namespace ddp::comm
