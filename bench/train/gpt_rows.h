#pragma once
// bench_train's GPT rows (Note [bench_train GPT rows]): the job of examples/gpt-fortunes.yaml
// shortened to `steps` steps, its token files, and the rows' figures (tokens/s, ms per step,
// MFU, the step-time breakdown).
// Thread model: one thread; prepare() computes for a few tenths of a second (the peak GEMM
// speed) and may read the fortunes corpus.

#include <memory>
#include <string>
#include <vector>

#include "bench/common/temp_dir.h"
#include "bench/train/train_job.h"
#include "common/jobspec/job_spec.h"
#include "common/status.h"

namespace ddp::bench {

struct GptBenchOptions {
  std::string exampleFile;  // examples/gpt-fortunes.yaml
  std::string tokensDir;    // train.bin and val.bin; empty: tokenize the fortunes corpus
  int steps = 60;
};

class GptBench {
 public:
  // Loads the example job, points it at the token files (writing them first when no folder is
  // given: the fortunes corpus as `ddpctl tokenize --bytes` would, into a temporary folder
  // removed with this object), and measures the MFU's denominator. InvalidArgument / NotFound
  // naming the file or folder that is missing or wrong.
  static Result<std::unique_ptr<GptBench>> prepare(const GptBenchOptions& options);
  ~GptBench();
  GptBench(const GptBench&) = delete;
  GptBench& operator=(const GptBench&) = delete;

  const JobSpec& spec() const { return spec_; }
  // The rows, one per worker count (`samples[i]` the runs of `workers[i]`), as JSON lines or a
  // table; false when a worker count had no successful run.
  bool printRows(const std::vector<int>& workers, const std::vector<std::vector<TrainSample>>& samples,
                 bool json) const;

 private:
  GptBench() = default;

  JobSpec spec_;
  TempDir tempDir_;              // the written token files' folder (when no --gpt-tokens)
  double flopsPerToken_ = 0;     // runtime::gptFlopsPerToken of the job's model
  double peakFlops_ = 0;         // runtime::measureCpuPeakFlops on one thread
};

}  // namespace ddp::bench
