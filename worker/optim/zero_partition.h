#pragma once
// Pure planner for ZeroRedundancyOptimizer: which rank owns (steps and broadcasts) each
// parameter. Sorted greedy, like PyTorch's ZeRO: parameters in decreasing size (ties by
// position), each to the rank with the smallest total so far (ties to the lowest rank); a
// parameter is never split. The largest rank total exceeds the mean by at most one parameter.
// Thread model: pure functions.

#include <cstddef>
#include <vector>

namespace ddp::optim {

// owner[i] = rank that owns parameter i. `world` >= 1.
std::vector<int> partitionParameters(const std::vector<size_t>& numels, int world);

// Positions owned by `rank`, ascending.
std::vector<size_t> ownedBy(const std::vector<int>& owners, int rank);

}  // namespace ddp::optim
