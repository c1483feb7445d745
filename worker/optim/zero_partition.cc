#include "worker/optim/zero_partition.h"

#include <algorithm>
#include <numeric>

namespace ddp::optim {

std::vector<int> partitionParameters(const std::vector<size_t>& numels, int world) {
  std::vector<size_t> order(numels.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return numels[a] > numels[b]; });
  std::vector<size_t> load(static_cast<size_t>(std::max(world, 1)), 0);
  std::vector<int> owner(numels.size(), 0);
  for (size_t i : order) {
    const size_t r = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[i] = static_cast<int>(r);
    load[r] += numels[i];
  }
  return owner;
}

std::vector<size_t> ownedBy(const std::vector<int>& owners, int rank) {
  std::vector<size_t> out;
  for (size_t i = 0; i < owners.size(); ++i) {
    if (owners[i] == rank) out.push_back(i);
  }
  return out;
}

}  // namespace ddp::optim
