#include "worker/training/peer_state.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "common/binary_io.h"
#include "common/named_sections.h"

namespace ddp::runtime {
namespace {

constexpr uint32_t kPeerStateMagic = 0x50455354;  // "PEST"

comm::OpOptions optsFor(Deadline d) {
  comm::OpOptions o;
  o.timeout = std::max(d.remaining(), Duration(std::chrono::milliseconds(1)));
  return o;
}

Status runOp(const comm::WorkPtr& w, Deadline d, const char* what) {
  return w->wait(d).withContext(what);
}

}  // namespace

std::string PeerState::encode() const {
  BinaryWriter w;
  w.put<int64_t>(step);
  w.put<int32_t>(worldSize);
  w.put<int64_t>(generation);
  w.put<uint64_t>(sections.size());
  putNamedSections(w, sections);
  return writeFramed(kPeerStateMagic, 1, w.data());
}

Result<PeerState> PeerState::decode(std::string_view bytes) {
  uint32_t version = 0;
  DDP_ASSIGN_OR_RETURN(std::string payload, readFramed(bytes, kPeerStateMagic, 1, &version, "peer state"));
  BinaryReader r(payload, "peer state");
  PeerState s;
  int32_t world = 0;
  uint64_t count = 0;
  DDP_RETURN_IF_ERROR(r.get(&s.step));
  DDP_RETURN_IF_ERROR(r.get(&world));
  DDP_RETURN_IF_ERROR(r.get(&s.generation));
  DDP_RETURN_IF_ERROR(r.get(&count));
  s.worldSize = world;
  DDP_RETURN_IF_ERROR(getNamedSections(r, count, &s.sections));
  if (!r.atEnd()) return dataLoss("peer state: trailing bytes");
  return s;
}

Result<std::optional<PeerState>> exchangePeerState(comm::Backend& backend, const PeerState* mine, Deadline deadline,
                                                   int* source) {
  int64_t newest = mine != nullptr ? mine->step : -1;
  DDP_RETURN_IF_ERROR(runOp(backend.allreduce(comm::viewOf(&newest, 1), comm::ReduceOp::kMax, optsFor(deadline)),
                            deadline, "peer state: newest step"));
  if (newest < 0) return std::optional<PeerState>();
  int64_t root = mine != nullptr && mine->step == newest ? backend.rank() : std::numeric_limits<int64_t>::max();
  DDP_RETURN_IF_ERROR(runOp(backend.allreduce(comm::viewOf(&root, 1), comm::ReduceOp::kMin, optsFor(deadline)),
                            deadline, "peer state: source rank"));
  const int src = static_cast<int>(root);
  if (source != nullptr) *source = src;
  std::string blob = backend.rank() == src ? mine->encode() : std::string();
  int64_t size = static_cast<int64_t>(blob.size());
  DDP_RETURN_IF_ERROR(runOp(backend.broadcast(comm::viewOf(&size, 1), src, optsFor(deadline)), deadline,
                            "peer state: size"));
  // Sent as 64-bit words (the backends have no byte type).
  std::vector<int64_t> words(static_cast<size_t>((size + 7) / 8), 0);
  if (backend.rank() == src && size > 0) std::memcpy(words.data(), blob.data(), blob.size());
  if (!words.empty()) {
    DDP_RETURN_IF_ERROR(runOp(backend.broadcast(comm::viewOf(words.data(), words.size()), src, optsFor(deadline)),
                              deadline, "peer state: sections"));
  }
  if (backend.rank() == src) return std::optional<PeerState>(*mine);
  std::string received(static_cast<size_t>(size), '\0');
  if (size > 0) std::memcpy(received.data(), words.data(), received.size());
  DDP_ASSIGN_OR_RETURN(PeerState state, PeerState::decode(received));
  return std::optional<PeerState>(std::move(state));
}

}  // namespace ddp::runtime
