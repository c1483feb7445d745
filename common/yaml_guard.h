#pragma once
// The shape checks a job document passes before it is loaded (Note [YAML guard] in
// yaml_guard.cc): no anchors or aliases, and no nesting deeper than kMaxYamlDepth.
// Thread model: pure functions.

#include <string>
#include <string_view>

namespace ddp {

inline constexpr int kMaxYamlDepth = 64;

struct YamlGuardError {
  std::string message;  // "" when the document passed
  int line = 0;         // 1-based
  int column = 0;
};

YamlGuardError checkYamlShape(std::string_view text);

}  // namespace ddp
