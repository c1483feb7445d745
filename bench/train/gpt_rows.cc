// GptBench (gpt_rows.h).
#include "bench/train/gpt_rows.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <span>

#include "common/tokens/byte_tokens.h"
#include "common/tokens/token_file.h"
#include "worker/training/job_spec_adapter.h"
#include "worker/training/model_flops.h"
#include "worker/training/training_setup.h"

namespace ddp::bench {
namespace {

const char* const kFortunesDir = "/usr/share/games/fortunes";
constexpr double kValFraction = 0.1;  // ddpctl tokenize's default

// The corpus's text files, as examples/gpt-fortunes.yaml lists them: regular files without a
// dot (not the .dat indexes nor the .u8 links), sorted.
std::vector<std::string> fortuneTexts() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kFortunesDir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_symlink() || !e.is_regular_file() || name.find('.') != std::string::npos) continue;
    out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// `ddpctl tokenize --bytes <the fortunes> -o dir`.
Status writeFortuneTokens(const std::string& dir) {
  const std::vector<std::string> files = fortuneTexts();
  if (files.empty()) {
    return notFound(std::string("no fortunes corpus in ") + kFortunesDir +
                    " (apt-get install fortunes, or give --gpt-tokens DIR with train.bin and val.bin)");
  }
  DDP_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, tokens::bytesToTokens(files));
  const auto total = static_cast<int64_t>(tokens.size());
  const int64_t val = tokens::valTokenCount(total, kValFraction);
  const std::span<const int32_t> all(tokens);
  DDP_RETURN_IF_ERROR(tokens::writeTokenFile(dir + "/train.bin", all.first(static_cast<size_t>(total - val)),
                                             tokens::TokenDType::kUint16));
  return tokens::writeTokenFile(dir + "/val.bin", all.last(static_cast<size_t>(val)), tokens::TokenDType::kUint16);
}

}  // namespace

Result<std::unique_ptr<GptBench>> GptBench::prepare(const GptBenchOptions& o) {
  std::unique_ptr<GptBench> b(new GptBench());
  DDP_ASSIGN_OR_RETURN(b->spec_, loadJobSpecFile(o.exampleFile));
  std::string dir = o.tokensDir;
  if (dir.empty()) {
    DDP_ASSIGN_OR_RETURN(b->tempDir_, TempDir::make("bench-train-gpt"));
    dir = b->tempDir_.path();
    DDP_RETURN_IF_ERROR(writeFortuneTokens(dir));
  }
  for (const char* f : {"/train.bin", "/val.bin"}) {
    if (!std::filesystem::is_regular_file(dir + f)) {
      return notFound("--gpt-tokens: no " + dir + f + " (write it with ddpctl tokenize --bytes FILE... -o " + dir + ")");
    }
  }
  JobSpec& s = b->spec_;
  s.name = "bench-gpt";
  s.data.train.path = dir + "/train.bin";
  s.data.val.path = dir + "/val.bin";
  s.steps = o.steps;
  s.eval.everySteps = 0;  // only the final evaluation, outside the timed step loop
  s.eval.limit = 32;
  DDP_ASSIGN_OR_RETURN(runtime::TrainerConfig config, runtime::trainerConfigFromJobSpec(s));
  config.cpuThreads = 1;
  DDP_ASSIGN_OR_RETURN(auto model, runtime::buildModel(config));
  b->flopsPerToken_ = runtime::gptFlopsPerToken(config.gpt, model->parameters());
  DDP_ASSIGN_OR_RETURN(b->peakFlops_, runtime::measureCpuPeakFlops(model->ops()));
  return b;
}

GptBench::~GptBench() = default;

bool GptBench::printRows(const std::vector<int>& workers, const std::vector<std::vector<TrainSample>>& samples,
                         bool json) const {
  bool ok = true;
  double base = 0;
  const double tokensPerSample = spec_.model.gpt.contextLength;
  if (!json) {
    std::printf("# gpt: %s shortened to %lld steps; MFU against %.1f GFLOP/s (one core's sgemm)\n",
                "examples/gpt-fortunes.yaml", static_cast<long long>(spec_.steps), peakFlops_ / 1e9);
    std::printf("%-5s %7s %12s %8s %9s %6s %10s %13s %11s\n", "model", "workers", "tokens/s", "speedup", "step ms",
                "mfu", "compute ms", "exp. comm ms", "optim ms");
  }
  for (size_t i = 0; i < workers.size() && i < samples.size(); ++i) {
    size_t okRuns = 0;
    const std::optional<TrainSample> med = medianSample(samples[i], &okRuns);
    if (!med) {
      ok = false;
      continue;
    }
    const int w = workers[i];
    const double tokensPerS = med->samplesPerS * tokensPerSample;
    if (w == 1) base = tokensPerS;
    const double speedup = base > 0 ? tokensPerS / base : 0;
    const double mfu = runtime::modelFlopsUtilisation(flopsPerToken_, tokensPerS, w, peakFlops_);
    const double perStep = 1000.0 / static_cast<double>(med->steps);
    if (json) {
      std::printf("{\"bench\":\"train\",\"model\":\"gpt\",\"workers\":%d,\"tokens_per_s\":%.1f,\"ms_per_step\":%.3f,"
                  "\"mfu\":%.4f,\"speedup_vs_1_worker\":%.3f,\"compute_ms\":%.3f,\"exposed_comm_ms\":%.3f,"
                  "\"hook_ms\":%.3f,\"optimizer_ms\":%.3f,\"data_ms\":%.3f,\"peak_gflops\":%.2f,\"steps\":%lld,"
                  "\"repeats\":%zu,\"device\":\"cpu\"}\n",
                  w, tokensPerS, med->stepMs(), mfu, speedup, med->compute * perStep, med->exposedComm * perStep,
                  med->hook * perStep, med->optimizer * perStep, med->data * perStep, peakFlops_ / 1e9,
                  static_cast<long long>(med->steps), okRuns);
    } else {
      std::printf("%-5s %7d %12.0f %7.2fx %9.2f %5.1f%% %10.2f %13.2f %11.2f\n", "gpt", w, tokensPerS, speedup,
                  med->stepMs(), 100 * mfu, med->compute * perStep, med->exposedComm * perStep,
                  med->optimizer * perStep);
    }
    std::fflush(stdout);
  }
  return ok;
}

}  // namespace ddp::bench
