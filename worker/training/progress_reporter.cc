#include "worker/training/progress_reporter.h"

#include <cmath>

namespace ddp::runtime {
namespace {

std::string num(double v, int precision = 6) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string clockTime(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

}  // namespace

ProgressReporter::ProgressReporter(LogFormat format, std::FILE* out) : format_(format), out_(out) {}

std::string ProgressReporter::jsonString(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

void ProgressReporter::line(const std::string& text) {
  std::string l = text + "\n";
  std::fwrite(l.data(), 1, l.size(), out_);
  std::fflush(out_);
}

void ProgressReporter::start(const std::string& job, int workers, const std::string& model,
                             size_t params, int64_t steps, int epochs) {
  if (format_ == LogFormat::kJson) {
    line("{\"event\":\"start\",\"job\":" + jsonString(job) + ",\"workers\":" + std::to_string(workers) +
         ",\"model\":" + jsonString(model) + ",\"params\":" + std::to_string(params) +
         ",\"steps\":" + std::to_string(steps) + ",\"epochs\":" + std::to_string(epochs) + "}");
  } else {
    line("job " + job + ": " + std::to_string(workers) + " workers, " + model + " (" +
         std::to_string(params) + " parameters), " + std::to_string(epochs) + " epochs = " +
         std::to_string(steps) + " steps");
  }
}

void ProgressReporter::resume(int64_t step, int epoch, const std::string& checkpoint) {
  if (format_ == LogFormat::kJson) {
    line("{\"event\":\"resume\",\"step\":" + std::to_string(step) + ",\"epoch\":" +
         std::to_string(epoch) + ",\"checkpoint\":" + jsonString(checkpoint) + "}");
  } else {
    line("resumed from " + checkpoint + " at step " + std::to_string(step) + " (epoch " +
         std::to_string(epoch) + ")");
  }
}

void ProgressReporter::step(const StepReport& r) {
  if (format_ == LogFormat::kJson) {
    line("{\"event\":\"step\",\"step\":" + std::to_string(r.step) + ",\"epoch\":" +
         std::to_string(r.epoch) + ",\"loss\":" + num(r.loss) + ",\"accuracy\":" + num(r.accuracy) +
         ",\"lr\":" + num(r.lr) + ",\"samples_per_s\":" + num(r.samplesPerSecond) +
         (r.tokensPerSecond ? ",\"tokens_per_s\":" + num(*r.tokensPerSecond) : std::string()) +
         ",\"eta_s\":" + num(r.etaSeconds, 4) + "}");
  } else if (r.tokensPerSecond) {
    line("step " + std::to_string(r.step) + "/" + std::to_string(r.totalSteps) + "  loss " + fixed(r.loss, 4) +
         "  acc " + fixed(100 * r.accuracy, 1) + "%  lr " + num(r.lr, 3) + "  " + fixed(*r.tokensPerSecond, 0) +
         " tokens/s  ETA " + clockTime(r.etaSeconds));
  } else {
    line("epoch " + std::to_string(r.epoch) + "/" + std::to_string(r.epochs) + " step " +
         std::to_string(r.step) + "/" + std::to_string(r.totalSteps) + "  loss " + fixed(r.loss, 4) +
         "  acc " + fixed(100 * r.accuracy, 1) + "%  lr " + num(r.lr, 3) + "  " +
         fixed(r.samplesPerSecond, 0) + " samples/s  ETA " + clockTime(r.etaSeconds));
  }
}

void ProgressReporter::eval(const EvalReport& r) {
  if (r.languageModel) {
    if (format_ == LogFormat::kJson) {
      line("{\"event\":\"eval\",\"step\":" + std::to_string(r.step) + ",\"epoch\":" + std::to_string(r.epoch) +
           ",\"test_loss\":" + num(r.testLoss) +
           ",\"val_loss\":" + num(r.testLoss) + ",\"perplexity\":" + num(std::exp(r.testLoss)) +
           ",\"test_accuracy\":" + num(r.testAccuracy) + ",\"elapsed_s\":" + num(r.elapsedSeconds, 4) + "}");
    } else {
      line("step " + std::to_string(r.step) + ": validation loss " + fixed(r.testLoss, 4) + " (perplexity " +
           fixed(std::exp(r.testLoss), 2) + ")  next-token accuracy " + fixed(100 * r.testAccuracy, 2) + "%  (" +
           fixed(r.elapsedSeconds, 1) + " s elapsed)");
    }
    return;
  }
  if (format_ == LogFormat::kJson) {
    line("{\"event\":\"eval\",\"step\":" + std::to_string(r.step) + ",\"epoch\":" +
         std::to_string(r.epoch) + ",\"test_loss\":" + num(r.testLoss) + ",\"test_accuracy\":" +
         num(r.testAccuracy) + ",\"elapsed_s\":" + num(r.elapsedSeconds, 4) + "}");
  } else {
    line("epoch " + std::to_string(r.epoch) + " done at step " + std::to_string(r.step) +
         ": test accuracy " + fixed(100 * r.testAccuracy, 2) + "%  test loss " + fixed(r.testLoss, 4) +
         "  (" + fixed(r.elapsedSeconds, 1) + " s elapsed)");
  }
}

void ProgressReporter::checkpoint(int64_t step, const std::string& path, double seconds) {
  if (format_ == LogFormat::kJson) {
    line("{\"event\":\"checkpoint\",\"step\":" + std::to_string(step) + ",\"path\":" +
         jsonString(path) + ",\"seconds\":" + num(seconds, 4) + "}");
  } else {
    line("checkpoint at step " + std::to_string(step) + " -> " + path + " (" + fixed(seconds, 2) + " s)");
  }
}

void ProgressReporter::checkpoint(int64_t step, const std::string& path, double seconds, const CheckpointTimes& t) {
  if (format_ == LogFormat::kJson) {
    line("{\"event\":\"checkpoint\",\"step\":" + std::to_string(step) + ",\"path\":" + jsonString(path) +
         ",\"seconds\":" + num(seconds, 4) + ",\"stall_s\":" + num(t.stallSeconds, 4) + ",\"write_s\":" +
         num(t.writeSeconds, 4) + ",\"commit_s\":" + num(t.commitSeconds, 4) + "}");
  } else {
    line("checkpoint at step " + std::to_string(step) + " -> " + path + " (training stalled " + fixed(t.stallSeconds, 3) +
         " s; written in the background in " + fixed(t.writeSeconds, 2) + " s, committed " + fixed(t.commitSeconds, 2) +
         " s later)");
  }
}

void ProgressReporter::checkpointFailed(int64_t step, const std::string& reason) {
  if (format_ == LogFormat::kJson) {
    line("{\"event\":\"checkpoint_failed\",\"step\":" + std::to_string(step) + ",\"reason\":" + jsonString(reason) + "}");
  } else {
    line("checkpoint at step " + std::to_string(step) + " not committed: " + reason + " (training goes on)");
  }
}

void ProgressReporter::stop(int64_t step, const std::string& reason) {
  if (format_ == LogFormat::kJson) {
    line("{\"event\":\"stop\",\"step\":" + std::to_string(step) + ",\"reason\":" + jsonString(reason) + "}");
  } else {
    line("stopped at step " + std::to_string(step) + ": " + reason);
  }
}

void ProgressReporter::done(int64_t step, int epoch, double testAccuracy, double elapsedSeconds,
                            std::optional<double> valLoss) {
  if (format_ == LogFormat::kJson) {
    line("{\"event\":\"done\",\"step\":" + std::to_string(step) + ",\"epoch\":" + std::to_string(epoch) +
         ",\"test_accuracy\":" + num(testAccuracy) +
         (valLoss ? ",\"val_loss\":" + num(*valLoss) : std::string()) + ",\"elapsed_s\":" +
         num(elapsedSeconds, 4) + "}");
  } else if (valLoss) {
    line("done: " + std::to_string(step) + " steps, final validation loss " + fixed(*valLoss, 4) + " (perplexity " +
         fixed(std::exp(*valLoss), 2) + "), next-token accuracy " + fixed(100 * testAccuracy, 2) + "% in " +
         fixed(elapsedSeconds, 1) + " s");
  } else {
    line("done: " + std::to_string(step) + " steps, " + std::to_string(epoch) +
         " epochs, final test accuracy " + fixed(100 * testAccuracy, 2) + "% in " +
         fixed(elapsedSeconds, 1) + " s");
  }
}

void ProgressReporter::summary(const Summary& s) {
  if (format_ != LogFormat::kJson) return;
  line("{\"event\":\"summary\",\"steps\":" + std::to_string(s.steps) + ",\"samples_per_s\":" +
       num(s.samplesPerSecond) + ",\"compute_s\":" + num(s.compute) + ",\"exposed_comm_s\":" +
       num(s.exposedComm) + ",\"hook_s\":" + num(s.hook) + ",\"optimizer_s\":" + num(s.optimizer) +
       ",\"data_s\":" + num(s.data) + "}");
}

}  // namespace ddp::runtime
