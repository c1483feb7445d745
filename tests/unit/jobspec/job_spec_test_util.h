#pragma once
// Helpers shared by the JobSpec tests (job_spec_test.cc, job_spec_validate_test.cc,
// job_spec_file_test.cc).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"

namespace ddp::spec_test {

// A valid document of 10 lines; text appended to it continues `spec` from line 11.
inline const char* kMinimal = R"(apiVersion: ddp.dev/v1
kind: DDPJob
metadata:
  name: mini
spec:
  model:
    type: mlp
  data:
    dataset: synthetic
  epochs: 1
)";

inline std::string withSpec(const std::string& extra) { return std::string(kMinimal) + extra; }

// A document whose spec is exactly `body` (lines indented by two spaces, from line 5 on).
inline std::string jobWithSpec(const std::string& body) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: t}\nspec:\n" + body;
}

// The errors of a document that must be refused; checks the status lists each of them.
inline std::vector<SpecError> errorsOf(const std::string& yaml) {
  std::vector<SpecError> errors;
  auto r = parseJobSpec(yaml, &errors);
  EXPECT_FALSE(r.isOk()) << yaml;
  if (!r.isOk()) {
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    for (const SpecError& e : errors) {
      EXPECT_NE(r.status().message().find(e.toString()), std::string::npos) << e.toString();
    }
  }
  return errors;
}

inline const SpecError* find(const std::vector<SpecError>& errors, const std::string& path) {
  auto it = std::find_if(errors.begin(), errors.end(), [&](const SpecError& e) { return e.path == path; });
  return it == errors.end() ? nullptr : &*it;
}
// A pointer into a temporary would dangle once the statement ends: keep the errors first.
const SpecError* find(std::vector<SpecError>&& errors, const std::string& path) = delete;

// Every .yaml job file in `dir`, each checked to load and to round-trip through toYaml().
inline std::vector<JobSpec> loadRoundTripping(const std::string& dir) {
  std::vector<JobSpec> specs;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    auto r = loadJobSpecFile(entry.path().string());
    EXPECT_TRUE(r.isOk()) << r.status();
    if (!r.isOk()) continue;
    auto again = parseJobSpec(r->toYaml());
    EXPECT_TRUE(again.isOk()) << again.status() << "\n" << r->toYaml();
    if (again.isOk()) EXPECT_EQ(*again, *r) << r->toYaml();
    specs.push_back(*r);
  }
  return specs;
}

inline bool contains(const std::string& text, const std::string& words) {
  return text.find(words) != std::string::npos;
}

}  // namespace ddp::spec_test
