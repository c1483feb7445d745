#include "tools/ddpctl/job_fields.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tools/ddpctl/output_format.h"

namespace ddp::ddpctl {

bool isTerminalPhase(const std::string& phase) {
  return phase == "Succeeded" || phase == "Failed" || phase == "Cancelled";
}

namespace fields {

const Json* find(const Json& j, Path path) {
  const Json* cur = &j;
  for (const char* key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur->is_null() ? nullptr : cur;
}

std::optional<double> number(const Json& j, Path path) {
  const Json* v = find(j, path);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::optional<int64_t> integer(const Json& j, Path path) {
  std::optional<double> v = number(j, path);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return static_cast<int64_t>(std::llround(*v));
}

std::optional<std::string> text(const Json& j, Path path) {
  const Json* v = find(j, path);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

bool flag(const Json& j, Path path) {
  const Json* v = find(j, path);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

const Json& arrayOrEmpty(const Json* v) {
  static const Json kEmpty = Json::array();
  return v != nullptr && v->is_array() ? *v : kEmpty;
}

std::string formatNumber(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string ageSince(const Json& j, Path path, int64_t nowUnix) {
  std::optional<std::string> t = text(j, path);
  std::optional<int64_t> at = t ? parseRfc3339(*t) : std::nullopt;
  return at ? formatAge(nowUnix - *at) : "-";
}

std::string workersText(const Json& job) {
  const Json& workers = arrayOrEmpty(find(job, {"status", "workers"}));
  const int64_t ready = std::count_if(workers.begin(), workers.end(), [](const Json& w) {
    return text(w, {"state"}).value_or("") == "Running";
  });
  std::optional<int64_t> count = integer(job, {"spec", "workers", "count"});
  if (!count && workers.empty()) return "-";
  const int64_t total = std::max<int64_t>(count.value_or(0), static_cast<int64_t>(workers.size()));
  return std::to_string(ready) + "/" + std::to_string(total);
}

bool started(const Json& job) {
  return integer(job, {"status", "progress", "step"}).value_or(0) > 0 ||
         integer(job, {"status", "progress", "totalSteps"}).value_or(0) > 0;
}

std::string stepText(const Json& job) {
  std::optional<int64_t> step = integer(job, {"status", "progress", "step"});
  std::optional<int64_t> total = integer(job, {"status", "progress", "totalSteps"});
  if (!step || !started(job)) return "-";
  return std::to_string(*step) + (total && *total > 0 ? "/" + std::to_string(*total) : "");
}

std::optional<double> progressFraction(const Json& job) {
  std::optional<double> step = number(job, {"status", "progress", "step"});
  std::optional<double> total = number(job, {"status", "progress", "totalSteps"});
  if (!step || !total || !(*total > 0)) return std::nullopt;
  return std::clamp(*step / *total, 0.0, 1.0);
}

std::string lossText(const Json& job) {
  std::optional<double> loss = number(job, {"status", "progress", "loss"});
  return loss && started(job) ? formatNumber("%.4f", *loss) : "-";
}

std::string accuracyText(const Json& job, const char* missing) {
  std::optional<double> acc = number(job, {"status", "progress", "testAccuracy"});
  return acc ? formatNumber("%.1f%%", *acc * 100.0) : missing;
}

std::optional<double> speed(const Json& job) {
  std::optional<double> sps = number(job, {"status", "progress", "samplesPerSecond"});
  return sps && *sps > 0 ? sps : std::nullopt;
}

std::optional<double> eta(const Json& job) {
  if (!speed(job) || isTerminalPhase(text(job, {"status", "phase"}).value_or(""))) return std::nullopt;
  return number(job, {"status", "progress", "etaSeconds"});
}

std::optional<double> valLoss(const Json& job) {
  std::optional<double> v = number(job, {"status", "progress", "valLoss"});
  return v && std::isfinite(*v) ? v : std::nullopt;
}

std::optional<double> perplexity(const Json& job) {
  std::optional<double> p = number(job, {"status", "progress", "perplexity"});
  if (p && std::isfinite(*p)) return p;
  std::optional<double> loss = valLoss(job);
  if (!loss || !std::isfinite(std::exp(*loss))) return std::nullopt;
  return std::exp(*loss);
}

std::optional<double> tokensPerSecond(const Json& job) {
  std::optional<double> v = number(job, {"status", "progress", "tokensPerSecond"});
  return v && *v > 0 && std::isfinite(*v) ? v : std::nullopt;
}

std::optional<double> mfu(const Json& job) {
  std::optional<double> v = number(job, {"status", "progress", "mfu"});
  return v && std::isfinite(*v) ? v : std::nullopt;
}

std::string valLossText(const Json& job) {
  std::optional<double> v = valLoss(job);
  return v ? formatNumber("%.4f", *v) : "-";
}

std::string perplexityText(const Json& job) {
  std::optional<double> p = perplexity(job);
  return p ? formatNumber("%.2f", *p) : "-";
}

std::string tokensPerSecondText(const Json& job) {
  std::optional<double> v = tokensPerSecond(job);
  return v ? formatNumber("%.0f tokens/s", *v) : "";
}

std::string mfuText(const Json& job) {
  std::optional<double> v = mfu(job);
  return v ? formatNumber("MFU %.1f%%", *v * 100.0) : "";
}

}  // namespace fields
}  // namespace ddp::ddpctl
