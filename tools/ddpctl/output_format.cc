#include "tools/ddpctl/output_format.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ddp::ddpctl {

using namespace fields;  // the JSON reads of job_fields.h

namespace {

constexpr int kLabelWidth = 16;  // describe: "Name:" padded so that values line up
constexpr const char* kNone = "<none>";

// A spec number as a person would write it: 64, 0.01, 1e-08.
std::string shortNumber(double v) { return formatNumber("%.6g", v); }

std::string intList(const Json* list) {
  if (list == nullptr || !list->is_array()) return "[]";
  std::string out = "[";
  for (const Json& x : *list) {
    if (out.size() > 1) out += ", ";
    out += x.is_number() ? shortNumber(x.get<double>()) : x.dump();
  }
  return out + "]";
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

size_t displayWidth(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // count UTF-8 lead bytes only
  return n;
}

}  // namespace

std::optional<int64_t> parseRfc3339(const std::string& t) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, used = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) != 6 ||
      used != 19) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  size_t i = 19;
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
  }
  int64_t offset = 0;
  if (i < t.size() && (t[i] == 'Z' || t[i] == 'z')) {
    ++i;
  } else if (i < t.size() && (t[i] == '+' || t[i] == '-')) {
    int oh = 0, om = 0, n = 0;
    if (std::sscanf(t.c_str() + i + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5) return std::nullopt;
    offset = (t[i] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != t.size()) return std::nullopt;
  // Days from 1970-01-01 to y-mo-d in the proleptic Gregorian calendar (H. Hinnant's algorithm).
  const int yy = y - (mo <= 2);
  const int era = (yy >= 0 ? yy : yy - 399) / 400;
  const int yoe = yy - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = static_cast<int64_t>(era) * 146097 + doe - 719468;
  return days * 86400 + h * 3600 + mi * 60 + s - offset;
}

std::string formatAge(int64_t s) {
  if (s < 0) return "0s";
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  if (s < 86400) return std::to_string(s / 3600) + "h";
  if (s < 365 * 86400) return std::to_string(s / 86400) + "d";
  return std::to_string(s / (365 * 86400)) + "y";
}

std::string formatSeconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const int64_t s = std::llround(seconds);
  auto two = [](int64_t big, const char* bigUnit, int64_t small, const char* smallUnit) {
    return std::to_string(big) + bigUnit + (small > 0 ? std::to_string(small) + smallUnit : "");
  };
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return two(s / 60, "m", s % 60, "s");
  if (s < 86400) return two(s / 3600, "h", s % 3600 / 60, "m");
  return two(s / 86400, "d", s % 86400 / 3600, "h");
}

std::string renderTable(const Table& table, int indent) {
  std::vector<size_t> widths(table.header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) {
      widths[c] = std::max(widths[c], displayWidth(row[c]));
    }
  };
  measure(table.header);
  for (const auto& row : table.rows) measure(row);
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string l(static_cast<size_t>(std::max(indent, 0)), ' ');
    for (size_t c = 0; c < widths.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      l += cell;
      if (c + 1 < widths.size()) l += std::string(widths[c] - displayWidth(cell) + 3, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(table.header);
  for (const auto& row : table.rows) line(row);
  return out;
}

namespace {

// The PHASE text: the phase, and "(checkpoints failing)" while the CheckpointsFailing condition
// is True (a job whose checkpoints all failed still ends Succeeded: its last words say so).
std::string phaseText(const Json& job, const std::string& fallback) {
  std::string phase = text(job, {"status", "phase"}).value_or(fallback);
  for (const Json& c : arrayOrEmpty(find(job, {"status", "conditions"}))) {
    if (text(c, {"type"}).value_or("") == "CheckpointsFailing" && text(c, {"status"}).value_or("") == "True") {
      phase += " (checkpoints failing)";
    }
  }
  return phase;
}

}  // namespace

Table jobTable(const Json& jobs, int64_t nowUnix, bool wide) {
  // Language-model columns only when a listed job reports the figure: a listing of other
  // models looks as it always did.
  const Json& list = arrayOrEmpty(&jobs);
  auto any = [&](auto figure) {
    return std::any_of(list.begin(), list.end(), [&](const Json& job) { return figure(job).has_value(); });
  };
  const bool withValLoss = any(valLoss);
  const bool withTokens = wide && any(tokensPerSecond);
  const bool withMfu = wide && any(mfu);
  constexpr size_t kValLossColumn = 6;  // after LOSS
  Table t;
  t.header = {"NAME", "PHASE", "WORKERS", "STEP", "PROGRESS", "LOSS", "ACCURACY", "AGE"};
  if (withValLoss) t.header.insert(t.header.begin() + kValLossColumn, "VAL-LOSS");
  if (wide) t.header.insert(t.header.end(), {"GENERATION", "RESTARTS", "ETA"});
  if (withTokens) t.header.push_back("TOKENS/S");
  if (withMfu) t.header.push_back("MFU");
  for (const Json& job : list) {
    const std::string phase = phaseText(job, "-");
    std::optional<double> fraction = progressFraction(job);
    std::vector<std::string> row = {
        text(job, {"metadata", "name"}).value_or("-"),
        phase,
        workersText(job),
        stepText(job),
        fraction ? std::to_string(static_cast<int>(std::floor(*fraction * 100.0))) + "%" : "-",
        lossText(job),
        accuracyText(job, "-"),
        ageSince(job, {"metadata", "creationTimestamp"}, nowUnix),
    };
    if (wide) {
      std::optional<int64_t> gen = integer(job, {"status", "generation"});
      std::optional<int64_t> restarts = integer(job, {"status", "restarts"});
      std::optional<double> left = eta(job);
      row.push_back(gen ? std::to_string(*gen) : "-");
      row.push_back(restarts ? std::to_string(*restarts) : "-");
      row.push_back(left ? formatSeconds(*left) : "-");
    }
    if (withValLoss) row.insert(row.begin() + kValLossColumn, valLossText(job));
    if (withTokens) {
      std::optional<double> tps = tokensPerSecond(job);
      row.push_back(tps ? formatNumber("%.0f", *tps) : "-");
    }
    if (withMfu) {
      std::optional<double> m = mfu(job);
      row.push_back(m ? formatNumber("%.1f%%", *m * 100.0) : "-");
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table checkpointTable(const Json& checkpoints) {
  Table t;
  t.header = {"STEP", "TIME", "BYTES", "WORLD-SIZE", "PATH"};
  for (const Json& c : arrayOrEmpty(&checkpoints)) {
    std::optional<int64_t> step = integer(c, {"step"});
    std::optional<int64_t> bytes = integer(c, {"bytes"});
    std::optional<int64_t> world = integer(c, {"worldSize"});
    t.rows.push_back({step ? std::to_string(*step) : "-", text(c, {"time"}).value_or("-"),
                      bytes ? std::to_string(*bytes) : "-", world ? std::to_string(*world) : "-",
                      text(c, {"path"}).value_or("-")});
  }
  return t;
}

std::string progressBar(double fraction, int width) {
  if (!std::isfinite(fraction)) fraction = 0;
  const int w = std::max(width, 1);
  const int filled = static_cast<int>(std::floor(std::clamp(fraction, 0.0, 1.0) * w));
  return "[" + std::string(static_cast<size_t>(filled), '#') +
         std::string(static_cast<size_t>(w - filled), '-') + "]";
}

std::string progressLine(const Json& job, int barWidth) {
  const std::string phase = text(job, {"status", "phase"}).value_or("Unknown");
  std::string head = phase;
  head.resize(std::max<size_t>(phase.size() + 1, 11), ' ');
  if (phase == "Pending") return head + "waiting for workers (" + workersText(job) + " running)";
  if (!started(job)) {
    return head + (isTerminalPhase(phase) ? "before the first step"
                                          : "starting (workers " + workersText(job) + " running)");
  }
  std::optional<double> fraction = progressFraction(job);
  std::optional<double> sps = speed(job);
  std::optional<double> left = eta(job);
  std::optional<int64_t> gen = integer(job, {"status", "generation"});
  std::vector<std::string> parts = {
      fraction ? progressBar(*fraction, barWidth) : "",
      stepText(job),
      fraction ? formatNumber("%5.1f%%", *fraction * 100.0) : "",
      "loss " + lossText(job),
      valLoss(job) ? "val loss " + valLossText(job) + " (ppl " + perplexityText(job) + ")" : "",
      sps ? formatNumber("%.0f samples/s", *sps) : "",
      tokensPerSecondText(job),
      mfuText(job),
      left ? "ETA " + formatSeconds(*left) : "",
      phase == "Restarting" && gen ? "generation " + std::to_string(*gen) : "",
  };
  return head + join(parts, "  ");
}

namespace {

// The message of the condition of type `type` with status True ("" when none).
std::string conditionMessage(const Json& job, const std::string& type) {
  for (const Json& c : arrayOrEmpty(find(job, {"status", "conditions"}))) {
    if (text(c, {"type"}).value_or("") == type && text(c, {"status"}).value_or("") == "True") {
      return text(c, {"message"}).value_or("");
    }
  }
  return "";
}

std::optional<int64_t> runSeconds(const Json& job) {
  std::optional<std::string> start = text(job, {"status", "startTime"});
  std::optional<std::string> end = text(job, {"status", "completionTime"});
  std::optional<int64_t> a = start ? parseRfc3339(*start) : std::nullopt;
  std::optional<int64_t> b = end ? parseRfc3339(*end) : std::nullopt;
  if (!a || !b || *b < *a) return std::nullopt;
  return *b - *a;
}

}  // namespace

std::string watchSummary(const Json& job) {
  const std::string phase = text(job, {"status", "phase"}).value_or("Unknown");
  std::optional<int64_t> took = runSeconds(job);
  std::string out = "job " + text(job, {"metadata", "name"}).value_or("?") + " " + phase;
  if (started(job)) {
    // A language model reports a validation loss instead of a test accuracy.
    const bool lm = valLoss(job).has_value();
    const bool accuracy = !lm || number(job, {"status", "progress", "testAccuracy"});
    out += ": " + join({"step " + stepText(job), "loss " + lossText(job),
                        lm ? "val loss " + valLossText(job) + ", perplexity " + perplexityText(job) : "",
                        accuracy ? "test accuracy " + accuracyText(job, "n/a") : "",
                        took ? "took " + formatSeconds(static_cast<double>(*took)) : ""},
                       ", ");
  } else {
    out += " before the first step";
  }
  if (phase == "Failed" || phase == "Cancelled") {
    const std::string why = conditionMessage(job, phase);
    if (!why.empty()) out += " (" + why + ")";
  }
  return out;
}

namespace {

std::string modelSummary(const Json& spec) {
  const std::string type = text(spec, {"model", "type"}).value_or("-");
  std::vector<std::string> parts = {type};
  if (type == "cnn") {
    parts.push_back("conv channels " + intList(find(spec, {"model", "convChannels"})));
    if (auto k = integer(spec, {"model", "kernelSize"})) parts.push_back("kernel " + std::to_string(*k));
  }
  if (const Json* hidden = find(spec, {"model", "hidden"})) parts.push_back("hidden " + intList(hidden));
  if (auto act = text(spec, {"model", "activation"})) parts.push_back(*act);
  return join(parts, ", ");
}

std::string dataSummary(const Json& spec) {
  const std::string dataset = text(spec, {"data", "dataset"}).value_or("-");
  std::vector<std::string> parts = {dataset};
  if (dataset == "synthetic") {
    auto n = integer(spec, {"data", "synthetic", "samples"});
    auto f = integer(spec, {"data", "synthetic", "features"});
    auto c = integer(spec, {"data", "synthetic", "classes"});
    if (n && f && c) {
      parts.back() += " (" + std::to_string(*n) + " samples, " + std::to_string(*f) + " features, " +
                      std::to_string(*c) + " classes)";
    }
  } else if (auto dir = text(spec, {"data", "dir"})) {
    parts.back() += " from " + *dir;
  }
  if (auto b = integer(spec, {"data", "batchSize"})) parts.push_back("batch " + std::to_string(*b) + " per worker");
  if (auto limit = integer(spec, {"data", "limit"}); limit && *limit > 0) {
    parts.push_back("first " + std::to_string(*limit) + " samples");
  }
  if (flag(spec, {"data", "uneven", "enabled"})) parts.push_back("uneven shards");
  return join(parts, ", ");
}

std::string workersSummary(const Json& spec) {
  auto count = integer(spec, {"workers", "count"});
  auto lo = integer(spec, {"workers", "min"});
  auto hi = integer(spec, {"workers", "max"});
  std::string w = count ? std::to_string(*count) : "-";
  if (lo && hi && (*lo != *hi || (count && *lo != *count))) {
    w += " (elastic " + std::to_string(*lo) + "-" + std::to_string(*hi) + ")";
  }
  std::vector<std::string> parts = {w};
  if (auto device = text(spec, {"device"})) parts.push_back("device " + *device);
  if (auto threads = integer(spec, {"threadsPerWorker"})) {
    parts.push_back(std::to_string(*threads) + (*threads == 1 ? " thread" : " threads") + " each");
  }
  return join(parts, ", ");
}

std::string optimizerSummary(const Json& spec) {
  const std::string type = text(spec, {"optimizer", "type"}).value_or("-");
  std::vector<std::string> parts = {type};
  if (auto lr = number(spec, {"optimizer", "lr"})) parts.push_back("lr " + shortNumber(*lr));
  if (auto m = number(spec, {"optimizer", "momentum"}); m && *m > 0) {
    parts.push_back("momentum " + shortNumber(*m) + (flag(spec, {"optimizer", "nesterov"}) ? " (nesterov)" : ""));
  }
  if (const Json* betas = find(spec, {"optimizer", "betas"}); betas && type != "sgd") {
    parts.push_back("betas " + intList(betas));
  }
  if (auto wd = number(spec, {"optimizer", "weightDecay"}); wd && *wd > 0) {
    parts.push_back("weight decay " + shortNumber(*wd));
  }
  if (auto clip = number(spec, {"optimizer", "maxGradNorm"}); clip && *clip > 0) {
    parts.push_back("clip " + shortNumber(*clip));
  }
  if (auto sched = text(spec, {"optimizer", "schedule", "type"}); sched && *sched != "constant") {
    parts.push_back(*sched + " schedule");
  }
  return join(parts, ", ");
}

std::string hookSummary(const Json& spec) {
  const std::string type = text(spec, {"commHook", "type"}).value_or("-");
  std::string h = type;
  if (type == "powerSGD" || type == "batchedPowerSGD") {
    auto rank = integer(spec, {"commHook", "powerSGD", "rank"});
    auto start = integer(spec, {"commHook", "powerSGD", "startIter"});
    if (rank && start) {
      h += " (rank " + std::to_string(*rank) + ", start iter " + std::to_string(*start) + ")";
    }
  }
  if (auto wrapper = text(spec, {"commHook", "wrapper"}); wrapper && *wrapper != "none") {
    h += ", " + *wrapper + " wrapper";
  }
  return h;
}

std::string trainingSummary(const Json& spec) {
  auto epochs = integer(spec, {"epochs"});
  auto steps = integer(spec, {"steps"});
  std::vector<std::string> parts;
  if (steps && *steps > 0) {
    parts.push_back(std::to_string(*steps) + " steps");
  } else {
    parts.push_back(epochs ? std::to_string(*epochs) + " epochs" : "-");
  }
  if (auto zero = text(spec, {"zero"}); zero && *zero != "none") parts.push_back("zero mode " + *zero);
  if (auto mp = text(spec, {"mixedPrecision"}); mp && *mp != "none") parts.push_back(*mp + " mixed precision");
  if (auto acc = integer(spec, {"gradientAccumulation", "steps"}); acc && *acc > 1) {
    parts.push_back("gradient accumulation " + std::to_string(*acc));
  }
  return join(parts, ", ");
}

std::string checkpointSummary(const Json& spec) {
  const std::string dir = text(spec, {"checkpoint", "dir"}).value_or("");
  if (dir.empty()) return kNone;
  auto every = integer(spec, {"checkpoint", "everySteps"});
  auto keep = integer(spec, {"checkpoint", "keep"});
  return join({dir,
               every && *every > 0 ? "every " + std::to_string(*every) + " steps" : "at the end",
               keep ? "keep " + std::to_string(*keep) : ""},
              ", ");
}

std::string labelLine(const std::string& label, const std::string& value, int indent = 0) {
  std::string l = std::string(static_cast<size_t>(indent), ' ') + label + ":";
  l.resize(std::max(l.size() + 1, static_cast<size_t>(kLabelWidth)), ' ');
  return l + (value.empty() ? kNone : value) + "\n";
}

std::string progressSummary(const Json& job) {
  if (!find(job, {"status", "progress"})) return kNone;
  std::optional<double> fraction = progressFraction(job);
  auto epoch = integer(job, {"status", "progress", "epoch"});
  auto epochs = integer(job, {"status", "progress", "epochs"});
  std::optional<double> sps = speed(job);
  std::optional<double> left = eta(job);
  return join({"step " + stepText(job) + (fraction ? formatNumber(" (%.1f%%)", *fraction * 100.0) : ""),
               epoch && epochs && *epochs > 0
                   ? "epoch " + std::to_string(std::min(*epoch + 1, *epochs)) + "/" + std::to_string(*epochs)
                   : "",
               "loss " + lossText(job), sps ? formatNumber("%.0f samples/s", *sps) : "",
               left ? "ETA " + formatSeconds(*left) : ""},
              ", ");
}

std::string section(const char* title, const Table& t) {
  return std::string(title) + ":\n" + (t.rows.empty() ? "  " + std::string(kNone) + "\n" : renderTable(t, 2));
}

}  // namespace

std::string describeJob(const Json& job, const Json& events, int64_t nowUnix, const Json& flightRecords) {
  std::string out;
  out += labelLine("Name", text(job, {"metadata", "name"}).value_or(""));
  out += labelLine("UID", text(job, {"metadata", "uid"}).value_or(""));
  std::vector<std::string> labels;
  if (const Json* l = find(job, {"metadata", "labels"}); l && l->is_object()) {
    for (const auto& [k, v] : l->items()) {
      labels.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
    }
  }
  out += labelLine("Labels", join(labels, ","));
  const std::string created = text(job, {"metadata", "creationTimestamp"}).value_or("");
  const std::string age = ageSince(job, {"metadata", "creationTimestamp"}, nowUnix);
  out += labelLine("Created", created.empty() ? "" : created + " (" + age + " ago)");
  out += labelLine("Phase", phaseText(job, ""));
  out += labelLine("Started", text(job, {"status", "startTime"}).value_or(""));
  out += labelLine("Completed", text(job, {"status", "completionTime"}).value_or(""));
  auto gen = integer(job, {"status", "generation"});
  auto restarts = integer(job, {"status", "restarts"});
  auto maxRestarts = integer(job, {"spec", "maxRestarts"});
  auto world = integer(job, {"status", "worldSize"});  // Note [Elastic membership]: it may differ from count
  out += labelLine("Generation", gen ? std::to_string(*gen) + (world && *gen > 0 ? " (world size " + std::to_string(*world) + ")" : "") : "");
  const std::string maxText = maxRestarts ? " (max " + std::to_string(*maxRestarts) + ")" : "";
  out += labelLine("Restarts", restarts ? std::to_string(*restarts) + maxText : "");
  out += labelLine("Progress", progressSummary(job));
  out += labelLine("Test accuracy", accuracyText(job, kNone));
  if (valLoss(job)) out += labelLine("Val loss", valLossText(job) + " (perplexity " + perplexityText(job) + ")");
  if (tokensPerSecond(job) || mfu(job)) out += labelLine("Throughput", join({tokensPerSecondText(job), mfuText(job)}, ", "));

  static const Json kNoSpec = Json::object();
  const Json* specPtr = find(job, {"spec"});
  const Json& spec = specPtr != nullptr ? *specPtr : kNoSpec;
  out += "Spec:\n";
  out += labelLine("Model", modelSummary(spec), 2);
  out += labelLine("Data", dataSummary(spec), 2);
  out += labelLine("Workers", workersSummary(spec), 2);
  out += labelLine("Optimizer", optimizerSummary(spec), 2);
  out += labelLine("Hook", hookSummary(spec), 2);
  out += labelLine("Training", trainingSummary(spec), 2);
  out += labelLine("Checkpoint", checkpointSummary(spec), 2);

  Table conditions{{"TYPE", "STATUS", "REASON", "AGE", "MESSAGE"}, {}};
  for (const Json& c : arrayOrEmpty(find(job, {"status", "conditions"}))) {
    conditions.rows.push_back({text(c, {"type"}).value_or("-"), text(c, {"status"}).value_or("-"),
                               text(c, {"reason"}).value_or("-"),
                               ageSince(c, {"lastTransitionTime"}, nowUnix), text(c, {"message"}).value_or("")});
  }
  out += section("Conditions", conditions);

  Table workers{{"RANK", "ID", "HOST", "PID", "STATE", "STEP", "HEARTBEAT"}, {}};
  for (const Json& w : arrayOrEmpty(find(job, {"status", "workers"}))) {
    auto num = [&](const char* key) {
      auto v = integer(w, {key});
      return v ? std::to_string(*v) : "-";
    };
    const std::string beat = ageSince(w, {"lastHeartbeat"}, nowUnix);
    workers.rows.push_back({num("rank"), text(w, {"id"}).value_or("-"), text(w, {"host"}).value_or("-"),
                            num("pid"), text(w, {"state"}).value_or("-"), num("step"),
                            beat == "-" ? beat : beat + " ago"});
  }
  out += section("Workers", workers);

  Table ev{{"TYPE", "REASON", "AGE", "MESSAGE"}, {}};
  for (const Json& e : arrayOrEmpty(&events)) {
    ev.rows.push_back({text(e, {"type"}).value_or("-"), text(e, {"reason"}).value_or("-"),
                       ageSince(e, {"time"}, nowUnix), text(e, {"message"}).value_or("")});
  }
  out += section("Events", ev);

  // Hangs with their flight records (docs/RECOVERY.md): one summary line each.
  Table hangs{{"REASON", "GENERATION", "AGE", "FLIGHT RECORDS"}, {}};
  for (const Json& h : arrayOrEmpty(&flightRecords)) {
    auto gen = integer(h, {"generation"});
    hangs.rows.push_back({text(h, {"reason"}).value_or("-"), gen ? std::to_string(*gen) : "-",
                          ageSince(h, {"time"}, nowUnix), text(h, {"summary"}).value_or("")});
  }
  if (!hangs.rows.empty()) out += section("Hangs", hangs);
  return out;
}

namespace {

// Whether a YAML reader would take `s`, written plain, as something other than this string.
bool needsQuotes(const std::string& s) {
  if (s.empty()) return true;
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const char* kWords[] = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~",
                                 ".inf", "-.inf", ".nan"};
  for (const char* w : kWords) {
    if (lower == w) return true;
  }
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

void emitYaml(YAML::Emitter& out, const Json& v) {
  switch (v.type()) {
    case Json::value_t::object:
      if (v.empty()) out << YAML::Flow;  // "{}" on the key's line
      out << YAML::BeginMap;
      for (const auto& [k, item] : v.items()) {
        out << YAML::Key;
        if (needsQuotes(k)) out << YAML::DoubleQuoted;
        out << k << YAML::Value;
        emitYaml(out, item);
      }
      out << YAML::EndMap;
      break;
    case Json::value_t::array:
      if (v.empty()) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const Json& item : v) emitYaml(out, item);
      out << YAML::EndSeq;
      break;
    case Json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      if (needsQuotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case Json::value_t::boolean: out << v.get<bool>(); break;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: out << v.dump(); break;  // JSON's shortest round-trip text
    default: out << YAML::Null; break;
  }
}

}  // namespace

std::string jsonToYaml(const Json& value) {
  YAML::Emitter out;
  emitYaml(out, value);
  std::string s = out.c_str();
  if (s.empty() || s.back() != '\n') s += "\n";
  return s;
}

}  // namespace ddp::ddpctl
