#include "worker/ddp/replica_sync.h"

#include <algorithm>
#include <string>

#include "kernels/flat_buffer.h"

namespace ddp {
namespace {

constexpr size_t kMaxDims = 6;                 // dims carried per descriptor (more are hashed)
constexpr size_t kDescWords = 3 + kMaxDims;    // present, dtype, ndim, dims...

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

std::vector<int64_t> descriptor(const Parameter* p) {
  std::vector<int64_t> d(kDescWords, 0);
  d[0] = 1;
  d[1] = static_cast<int64_t>(p->dtype);
  d[2] = static_cast<int64_t>(p->shape.size());
  uint64_t tail = 0;
  for (size_t k = 0; k < p->shape.size(); ++k) {
    if (k < kMaxDims - 1) d[3 + k] = p->shape[k];
    else tail = mix(tail, static_cast<uint64_t>(p->shape[k]));
  }
  if (p->shape.size() >= kMaxDims) d[3 + kMaxDims - 1] = static_cast<int64_t>(tail);
  return d;
}

std::string describe(const int64_t* d) {
  if (d[0] == 0) return "no such parameter";
  std::string s = "[";
  const int64_t nd = d[2];
  for (int64_t k = 0; k < nd && k < static_cast<int64_t>(kMaxDims) - 1; ++k) s += (k ? ", " : "") + std::to_string(d[3 + k]);
  if (nd >= static_cast<int64_t>(kMaxDims)) s += ", ...";
  return s + "] " + dtypeName(static_cast<DType>(d[1]));
}


}  // namespace

Device stagingDevice(const std::vector<Parameter*>& params) {
  for (const Parameter* p : params) {
    if (p->device.isCuda()) return p->device;
  }
  return Device::cuda(0);
}

Status runStaged(comm::Backend& backend, Device device, const std::vector<comm::BufferView>& host,
                 const std::function<comm::WorkPtr(const std::vector<comm::BufferView>&)>& op, Deadline deadline) {
  if (backend.supportsDevice(DeviceType::kCpu)) return op(host)->wait(deadline);
  std::vector<kernels::FlatBuffer> staged;
  std::vector<comm::BufferView> views;
  for (const auto& h : host) {
    DDP_ASSIGN_OR_RETURN(kernels::FlatBuffer buf, kernels::FlatBuffer::allocate(h.count, h.dtype, device));
    DDP_RETURN_IF_ERROR(kernels::copyFlat(buf.view(), comm::flat(h)));
    views.push_back({buf.data(), h.count, h.dtype, device});
    staged.push_back(std::move(buf));
  }
  DDP_RETURN_IF_ERROR(op(views)->wait(deadline));
  for (size_t i = 0; i < host.size(); ++i) DDP_RETURN_IF_ERROR(kernels::copyFlat(comm::flat(host[i]), staged[i].view()));
  return Status::ok();
}

Status verifyParameterSignatures(comm::Backend& backend, const std::vector<Parameter*>& params, Deadline deadline) {
  const int world = backend.size();
  const comm::OpOptions opts{deadline.remaining()};
  uint64_t h = 0;
  for (const Parameter* p : params) {
    for (int64_t w : descriptor(p)) h = mix(h, static_cast<uint64_t>(w));
  }
  std::vector<int64_t> mine = {static_cast<int64_t>(h), static_cast<int64_t>(params.size())};
  std::vector<int64_t> all(2 * static_cast<size_t>(world));
  const Device staging = stagingDevice(params);
  auto allgather = [&](const std::vector<comm::BufferView>& v) { return backend.allgather(v[0], v[1], opts); };
  Status st = runStaged(backend, staging, {comm::viewOf(mine.data(), 2), comm::viewOf(all.data(), all.size())},
                        allgather, deadline);
  if (!st.isOk()) return st.withContext("DDP parameter check (allgather of signatures)");
  bool same = true;
  int64_t maxCount = 0;
  for (int r = 0; r < world; ++r) {
    same = same && all[2 * r] == all[0] && all[2 * r + 1] == all[1];
    maxCount = std::max(maxCount, all[2 * r + 1]);
  }
  if (same) return Status::ok();

  // Mismatch: exchange descriptors (padded to the largest count) to name the first difference.
  const size_t words = static_cast<size_t>(maxCount) * kDescWords;
  std::vector<int64_t> descs(std::max<size_t>(words, 1), 0);
  for (size_t i = 0; i < params.size(); ++i) {
    auto d = descriptor(params[i]);
    std::copy(d.begin(), d.end(), descs.begin() + static_cast<ptrdiff_t>(i * kDescWords));
  }
  std::vector<int64_t> gathered(descs.size() * static_cast<size_t>(world));
  st = runStaged(backend, staging,
                 {comm::viewOf(descs.data(), descs.size()), comm::viewOf(gathered.data(), gathered.size())}, allgather,
                 deadline);
  if (!st.isOk()) return st.withContext("DDP parameter check (allgather of descriptors)");
  for (size_t i = 0; i < static_cast<size_t>(maxCount); ++i) {
    const int64_t* ref = &gathered[i * kDescWords];
    for (int r = 1; r < world; ++r) {
      const int64_t* other = &gathered[static_cast<size_t>(r) * descs.size() + i * kDescWords];
      if (std::equal(ref, ref + kDescWords, other)) continue;
      std::string name = i < params.size() ? " ('" + params[i]->name + "' here on rank " +
                                                 std::to_string(backend.rank()) + ")"
                                           : "";
      return invalidArgument("DDP replicas registered different parameters: parameter " + std::to_string(i) + name +
                             ": rank 0 has " + describe(ref) + ", rank " + std::to_string(r) + " has " +
                             describe(other) + " (counts: rank 0 " + std::to_string(all[1]) + ", rank " +
                             std::to_string(r) + " " + std::to_string(all[2 * r + 1]) + ")");
    }
  }
  return invalidArgument("DDP replicas registered different parameters (signature hashes differ beyond " +
                         std::to_string(kMaxDims) + " dims)");
}

Status broadcastFrom(comm::Backend& backend, const std::vector<comm::BufferView>& views, int root, Deadline deadline) {
  const comm::OpOptions opts{deadline.remaining()};
  std::vector<comm::WorkPtr> works;
  works.reserve(views.size());
  for (const auto& v : views) {
    if (v.count > 0) works.push_back(backend.broadcast(v, root, opts));
  }
  Status first;
  for (auto& w : works) {
    Status st = w->wait(deadline);
    if (first.isOk() && !st.isOk()) first = st;
  }
  return first.isOk() ? first : first.withContext("DDP broadcast from rank " + std::to_string(root));
}

}  // namespace ddp
