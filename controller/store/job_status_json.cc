#include "controller/store/job_status_json.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>

#include "common/utf8.h"

namespace ddp::controller {
namespace {

using nlohmann::json;

// An optional figure: null when unknown or not finite (JSON has no NaN or infinity).
json figureOrNull(const std::optional<double>& v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); }

}  // namespace

std::string rfc3339(int64_t unixMs) {
  if (unixMs == 0) return "";
  std::time_t secs = static_cast<std::time_t>(unixMs / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(unixMs % 1000));
  return buf;
}

json timeOrNull(int64_t unixMs) { return unixMs == 0 ? json(nullptr) : json(rfc3339(unixMs)); }

json conditionsJson(const std::vector<JobCondition>& conditions) {
  json out = json::array();
  for (const auto& c : conditions) {
    out.push_back({{"type", c.type}, {"status", c.status ? "True" : "False"}, {"reason", toValidUtf8(c.reason)},
                   {"message", toValidUtf8(c.message)}, {"lastTransitionTime", rfc3339(c.lastTransitionMs)}});
  }
  return out;
}

json progressJson(const JobProgress& p) {
  return {{"step", p.step},
          {"totalSteps", p.totalSteps},
          {"epoch", p.epoch},
          {"epochs", p.epochs},
          {"loss", std::isfinite(p.loss) ? json(p.loss) : json(nullptr)},
          {"samplesPerSecond", p.samplesPerSecond},
          {"testAccuracy", p.testAccuracy ? json(*p.testAccuracy) : json(nullptr)},
          {"etaSeconds", p.etaSeconds},
          // Language models only (docs/API.md, "The job object"); null otherwise.
          {"valLoss", figureOrNull(p.valLoss)},
          {"perplexity", figureOrNull(p.perplexity())},
          {"tokensPerSecond", figureOrNull(p.tokensPerSecond)},
          {"mfu", figureOrNull(p.mfu)}};
}

}  // namespace ddp::controller
