#pragma once
// A reader of the Prometheus text exposition format (0.0.4) for tests: samples by name and
// labels, and each family's `# TYPE`. Enough for the controller's own output (label values
// without escaped quotes); not a general parser.
// Thread model: plain values and pure functions.

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace ddp::test {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromText {
  std::vector<PromSample> samples;
  std::map<std::string, std::string> types;  // family -> counter | gauge | histogram | ...

  static PromText parse(const std::string& text) {
    PromText out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("# TYPE ", 0) == 0) {
        std::istringstream t(line.substr(7));
        std::string name, type;
        t >> name >> type;
        out.types[name] = type;
        continue;
      }
      if (line.empty() || line[0] == '#') continue;
      PromSample s;
      size_t i = line.find_first_of("{ ");
      s.name = line.substr(0, i);
      if (i != std::string::npos && line[i] == '{') {
        size_t j = i + 1;
        while (j < line.size() && line[j] != '}') {
          const size_t eq = line.find('=', j);
          const size_t q1 = line.find('"', eq);
          const size_t q2 = line.find('"', q1 + 1);
          s.labels[line.substr(j, eq - j)] = line.substr(q1 + 1, q2 - q1 - 1);
          j = q2 + 1;
          if (j < line.size() && line[j] == ',') ++j;
        }
        i = j + 1;
      }
      s.value = std::strtod(line.c_str() + i, nullptr);
      out.samples.push_back(std::move(s));
    }
    return out;
  }

  // The value of the sample `name` whose labels include `labels`; nullopt when none.
  std::optional<double> value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& s : samples) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        match = match && it != s.labels.end() && it->second == v;
      }
      if (match) return s.value;
    }
    return std::nullopt;
  }
  // How many samples named `name` carry label `key` = `value`.
  size_t count(const std::string& name, const std::string& key, const std::string& v) const {
    size_t n = 0;
    for (const auto& s : samples) {
      auto it = s.labels.find(key);
      if (s.name == name && it != s.labels.end() && it->second == v) ++n;
    }
    return n;
  }
};

// The contract: every family the controller exports, with its type and labels
// (besides `le` on histogram buckets). docs/METRICS.md lists the same.
struct FamilySpec {
  const char* name;
  const char* type;
  std::vector<std::string> labels;
};
inline const std::vector<FamilySpec>& controllerFamilies() {
  static const std::vector<FamilySpec> f = {
      {"ddp_jobs", "gauge", {"phase"}},
      {"ddp_jobs_created_total", "counter", {}},
      {"ddp_jobs_succeeded_total", "counter", {}},
      {"ddp_jobs_failed_total", "counter", {}},
      {"ddp_job_restarts_total", "counter", {"job"}},
      {"ddp_job_workers", "gauge", {"job", "state"}},
      {"ddp_job_world_size", "gauge", {"job"}},
      {"ddp_job_generation", "gauge", {"job"}},
      {"ddp_rendezvous_seconds", "histogram", {}},
      {"ddp_worker_heartbeat_age_seconds", "gauge", {"job", "rank"}},
      {"ddp_job_steps_total", "counter", {"job"}},
      {"ddp_job_samples_total", "counter", {"job"}},
      {"ddp_job_samples_per_second", "gauge", {"job"}},
      {"ddp_job_loss", "gauge", {"job"}},
      {"ddp_job_test_accuracy", "gauge", {"job"}},
      {"ddp_job_val_loss", "gauge", {"job"}},
      {"ddp_job_perplexity", "gauge", {"job"}},
      {"ddp_job_tokens_per_second", "gauge", {"job"}},
      {"ddp_job_mfu", "gauge", {"job"}},
      {"ddp_job_progress_ratio", "gauge", {"job"}},
      {"ddp_job_eta_seconds", "gauge", {"job"}},
      {"ddp_job_step_seconds", "histogram", {"job"}},
      {"ddp_job_comm_bytes_total", "counter", {"job"}},
      {"ddp_job_comm_exposed_seconds_total", "counter", {"job"}},
      {"ddp_job_compression_ratio", "gauge", {"job"}},
      {"ddp_hangs_detected_total", "counter", {"job", "reason"}},
      {"ddp_worker_deaths_total", "counter", {"job"}},
      {"ddp_aborts_total", "counter", {"job"}},
      {"ddp_recovery_seconds", "histogram", {"job"}},
      {"ddp_checkpoint_seconds", "histogram", {"job", "phase"}},
      {"ddp_checkpoint_bytes_total", "counter", {"job"}},
      {"ddp_checkpoints_committed_total", "counter", {"job"}},
      {"ddp_checkpoint_failures_total", "counter", {"job"}},
      {"ddp_http_requests_total", "counter", {"route", "code"}},
      {"ddp_http_request_seconds", "histogram", {"route"}},
      {"ddp_http_connections_dropped_total", "counter", {"listener", "reason"}},
      {"ddp_job_checkpoints_failing", "gauge", {"job"}},
      {"ddp_controller_info", "gauge", {"version"}},
  };
  return f;
}

// The name of a family's first sample ("_count" for histograms; counters carry their _total).
inline std::string sampleName(const FamilySpec& f) {
  return std::string(f.name) + (std::string(f.type) == "histogram" ? "_count" : "");
}

}  // namespace ddp::test
