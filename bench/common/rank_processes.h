#pragma once
// Runs one configuration of a multi-process benchmark: this binary re-executed once per rank
// (its --worker mode), each child with OPENBLAS_NUM_THREADS=1; every rank writes its figures as
// whitespace-separated numbers to <dir>/result_<rank>.
// Thread model: blocks the calling thread until every child has exited.

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::bench {

using RankArgvFn = std::function<std::vector<std::string>(int rank)>;

// Forks and execs /proc/self/exe with argvFor(rank) (argv[0] included) for ranks [0, world),
// waits for all of them, then reads `fields` numbers from dir/result_<rank> of each: out[rank].
// Unavailable if a fork fails; Internal if a rank exits non-zero or its result file is short.
Result<std::vector<std::vector<double>>> runRankProcesses(int world, const RankArgvFn& argvFor,
                                                          const std::string& dir, int fields);

}  // namespace ddp::bench
