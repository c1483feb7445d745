#pragma once
// The field table of a DDPJob document: every field parseJobSpec() accepts, with its type. The
// parser takes the keys it allows in each mapping from here (an unknown key is an error naming
// the allowed ones), and the CRD test (tests/unit/jobspec/job_spec_crd_test.cc) walks this table
// and the CRD's OpenAPI schema (charts/ddp/crds/ddpjobs.ddp.dev.yaml) and fails on any field
// one has and the other lacks: one source of truth for the document's shape.
// Thread model: immutable data and pure functions.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddp {

enum class SpecFieldType : uint8_t {
  kObject,       // a mapping whose keys are the fields below it
  kString,
  kInteger,
  kNumber,
  kBoolean,
  kIntegerList,
  kNumberList,
  kObjectList,   // a sequence of mappings, whose fields are listed under "path[]"
  kStringMap,    // any keys, string values (labels, nodeSelector)
  kQuantityMap,  // any keys, Kubernetes quantities (resources.requests / limits)
  kIgnored,      // accepted and ignored (ObjectMeta the API server adds, status)
};

// The JSON-schema spelling of a type ("object", "string", "integer", "array", ...).
const char* specFieldTypeName(SpecFieldType t);

struct SpecField {
  std::string_view path;  // "spec.workers.count"; the fields of a list item: "spec.x[].key"
  SpecFieldType type;
};

// Every field, parents before their children.
const std::vector<SpecField>& jobSpecFields();

// The keys allowed in the mapping at `path` ("" for the document; indices as in error paths,
// "spec.kubernetes.tolerations[2]", are read as "[]"), in table order.
std::vector<std::string> jobSpecFieldKeys(std::string_view path);

}  // namespace ddp
