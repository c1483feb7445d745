// spec.kubernetes.tolerations, the one list of objects in a DDPJob: read and written by the
// field table's list hooks (job_spec_fields_kubernetes.cc), each item's keys checked against the
// table's "spec.kubernetes.tolerations[]" entries.
#include <yaml-cpp/yaml.h>

#include <limits>
#include <string>
#include <vector>

#include "common/jobspec/job_spec_parser.h"

namespace ddp::job_spec_detail {

void parseTolerations(Parser& parser, const YAML::Node& n, JobSpec& spec) {
  const std::string p = "spec.kubernetes.tolerations";
  if (!n.IsSequence()) {
    parser.fail(n, p, "expected a sequence of tolerations, got " + describe(n));
    return;
  }
  std::vector<TolerationSpec>& out = spec.kubernetes.tolerations;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string ip = p + "[" + std::to_string(i) + "]";
    TolerationSpec t;
    if (parser.mapping(n[i], ip)) {
      const YAML::Node item = n[i];
      for (auto [key, field] : {std::pair{"key", &t.key}, std::pair{"operator", &t.op},
                                std::pair{"value", &t.value}, std::pair{"effect", &t.effect}}) {
        if (item[key]) parser.readString(item[key], ip + "." + key, field);
      }
      int64_t seconds = 0;
      if (item["tolerationSeconds"] && parser.readInt(item["tolerationSeconds"], ip + ".tolerationSeconds", &seconds,
                                                      0, std::numeric_limits<int64_t>::max())) {
        t.tolerationSeconds = seconds;
      }
    }
    out.push_back(std::move(t));
  }
}

void emitTolerations(YAML::Emitter& out, const JobSpec& spec) {
  out << YAML::BeginSeq;
  for (const TolerationSpec& t : spec.kubernetes.tolerations) {
    out << YAML::BeginMap;
    for (auto [key, value] : {std::pair{"key", &t.key}, std::pair{"operator", &t.op},
                              std::pair{"value", &t.value}, std::pair{"effect", &t.effect}}) {
      out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << *value;
    }
    if (t.tolerationSeconds) out << YAML::Key << "tolerationSeconds" << YAML::Value << *t.tolerationSeconds;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

}  // namespace ddp::job_spec_detail
