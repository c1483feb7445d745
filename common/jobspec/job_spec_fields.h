#pragma once
// The field table of a DDPJob document: every field parseJobSpec() accepts, the one source of
// the document's shape (Note [Job spec field table]).
// Thread model: immutable data and pure functions.
//
// Note [Job spec field table]
// Each entry names a field by its path and gives its type, a description, its binding to the
// JobSpec struct (get/set), and its plain constraints (a range, the allowed spellings, whether
// it is required, when it is allowed at all). From the table come:
//  - the parser (job_spec_yaml.cc): the keys each mapping allows, reading, type errors with line
//    and column, defaults that depend on other fields, "only valid when" errors;
//  - the emitter (job_spec_emit.cc): toYaml();
//  - the plain checks (job_spec_field_checks.cc): ranges, finite numbers, allowed spellings,
//    run by JobSpec::validate() beside the cross-field rules (job_spec_validate.cc), which stay
//    hand-written in one place;
//  - the CRD's openAPIV3Schema and the field table of docs/JOB_SPEC.md (job_spec_schema.cc,
//    written by tools/jobspec, run by scripts/render_manifests.sh; tests compare both files).
// Adding a plain field: a member of the struct (job_spec.h), its entry here, its use.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace YAML {
class Node;
class Emitter;
}  // namespace YAML

namespace ddp {

struct JobSpec;
namespace job_spec_detail {
class Parser;
}  // namespace job_spec_detail

enum class SpecFieldType : uint8_t {
  kObject,       // a mapping whose keys are the fields below it
  kString,
  kInteger,
  kNumber,
  kBoolean,
  kIntegerList,
  kNumberList,
  kStringList,
  kObjectList,   // a sequence of mappings, whose fields are listed under "path[]"
  kStringMap,    // any keys, string values (labels, nodeSelector)
  kQuantityMap,  // any keys, Kubernetes quantities (resources.requests / limits)
  kIgnored,      // accepted and ignored (ObjectMeta the API server adds, status)
  // A Kubernetes object / a list of them carried as it is, held as JSON text (Note [Carried
  // Kubernetes objects] in kube_object.h); its shape is checked by validate().
  kKubeObject,
  kKubeObjectList,
};

// The JSON-schema spelling of a type ("object", "string", "integer", "array of integer", ...).
const char* specFieldTypeName(SpecFieldType t);

// A field's value, as the table reads and writes it: integers as int64_t, numbers as double,
// enumerations as their spelling; monostate for an optional value that is not set.
using SpecValue = std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, std::map<std::string, std::string>>;

// One end of a range; `exclusive`: the value itself is outside; `note`: said after the bound in
// an error ("604800 (7 days)").
struct SpecBound {
  double value = 0;
  bool exclusive = false;
  std::string_view note;
};

struct SpecField {
  std::string_view path;  // "spec.workers.count"; the fields of a list item: "spec.x[].key"
  SpecFieldType type = SpecFieldType::kObject;
  std::string_view description;
  // The binding (empty for objects, ignored fields and the fields of list items).
  std::function<SpecValue(const JobSpec&)> get;
  std::function<void(JobSpec&, const SpecValue&)> set;
  // Integers: what the struct member can hold (the parser's bounds).
  int64_t storeMin = INT64_MIN;
  int64_t storeMax = INT64_MAX;
  // Plain constraints, checked by validate() and written into the CRD. For lists they apply
  // to each item.
  std::optional<SpecBound> min;
  std::optional<SpecBound> max;
  std::string_view rangeNote;             // appended to a range error ("0: no clipping")
  std::string_view unit;                  // of a number's bounds in errors ("s")
  bool singlePrecision = false;           // the worker keeps the number in a float
  std::vector<std::string> allowed;       // the spellings of an enumeration or a checked string
  std::vector<std::string> parsedOnly;    // spellings the parser reads and validate() refuses
  bool enumeration = false;               // a C++ enum: the parser refuses other spellings
  size_t listLength = 0;                  // a list of exactly this many items (0: any)
  // A string's maxLength in the CRD (0: none), bounding the cost the API server estimates for an
  // admission rule that reads it (Note [CRD admission rules]); the length itself is checked by
  // the field's own rule in validate(), with its message.
  size_t maxLength = 0;
  bool required = false;
  bool quoted = true;                     // strings: emitted double-quoted (free text)
  // The range is stated for the CRD and the docs, and checked by a cross-field rule
  // (job_spec_validate.cc) with its own message.
  bool checkedByRule = false;
  // Allowed only when this holds (evaluated on the fields before it in the table); the parser
  // reports "only valid when <condition>" and skips the value, the emitter leaves it out.
  std::function<bool(const JobSpec&)> onlyWhen;
  std::string_view condition;
  // Emitted only when this holds (defaults to onlyWhen).
  std::function<bool(const JobSpec&)> emitWhen;
  // The value when the document leaves the field out, when it depends on other fields.
  std::function<SpecValue(const JobSpec&)> absentDefault;
  std::string_view defaultNote;  // the default as the docs say it, when it is not a constant
  // A list of objects (kObjectList): read and written by its own code, the fields of its items
  // listed under "path[]" for the parser's key checks, the CRD and the docs.
  std::function<void(job_spec_detail::Parser&, const YAML::Node&, JobSpec&)> parseList;
  std::function<void(YAML::Emitter&, const JobSpec&)> emitList;
  // A list of single-key objects (kObjectList): each item holds exactly one of the keys listed
  // under "path[]" (a layer of spec.model.stack: {linear: {out: 10}}).
  bool singleKey = false;
};

// Every field, parents before their children.
const std::vector<SpecField>& jobSpecFields();

// The field at `path` (indices read as "[]"), or nullptr.
const SpecField* findJobSpecField(std::string_view path);

// The keys allowed in the mapping at `path` ("" for the document; indices as in error paths,
// "spec.kubernetes.tolerations[2]", are read as "[]"), in table order.
std::vector<std::string> jobSpecFieldKeys(std::string_view path);

// The fields directly under `path`, in table order.
std::vector<const SpecField*> jobSpecChildren(std::string_view path);

// The bound of `f` that `v` breaks, as "must be >= 1 s, got 0" (with the field's notes); empty
// when `v` is in range.
std::string specRangeError(const SpecField& f, double v);

// "a.b[3].c" -> "a.b[].c"
std::string withoutIndices(std::string_view path);

// A number as errors and the docs write it: the shortest text that reads back as `v`, whole
// numbers without an exponent (2147483647, 0.0001, 1e-300).
std::string specNumberText(double v);

}  // namespace ddp
