// The CRD schema and the docs table from the field table (job_spec_schema.h).
#include "common/jobspec/job_spec_schema.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <variant>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_cel_rules.h"
#include "common/jobspec/job_spec_fields.h"

namespace ddp {
namespace {

// The Kubernetes quantity grammar (apimachinery resource.Quantity), as the API server checks it.
constexpr const char* kQuantityPattern =
    "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";

std::string num(double v) { return specNumberText(v); }

bool isList(SpecFieldType t) {
  return t == SpecFieldType::kIntegerList || t == SpecFieldType::kNumberList || t == SpecFieldType::kStringList;
}

const char* scalarType(SpecFieldType t) {
  switch (t) {
    case SpecFieldType::kInteger:
    case SpecFieldType::kIntegerList: return "integer";
    case SpecFieldType::kNumber:
    case SpecFieldType::kNumberList: return "number";
    case SpecFieldType::kBoolean: return "boolean";
    default: return "string";
  }
}

// The value as the docs write it.
std::string valueText(const SpecValue& v) {
  struct Visitor {
    std::string operator()(std::monostate) const { return "unset"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const { return num(x); }
    std::string operator()(const std::string& s) const { return s.empty() ? "\"\"" : s; }
    std::string operator()(const std::vector<int64_t>& xs) const {
      std::string out;
      for (int64_t x : xs) out += (out.empty() ? "" : ", ") + std::to_string(x);
      return "[" + out + "]";
    }
    std::string operator()(const std::vector<double>& xs) const {
      std::string out;
      for (double x : xs) out += (out.empty() ? "" : ", ") + num(x);
      return "[" + out + "]";
    }
    std::string operator()(const std::vector<std::string>& xs) const {
      std::string out;
      for (const std::string& x : xs) out += (out.empty() ? "" : ", ") + x;
      return "[" + out + "]";
    }
    std::string operator()(const std::map<std::string, std::string>& m) const { return m.empty() ? "{}" : "..."; }
  };
  return std::visit(Visitor{}, v);
}

std::string defaultText(const SpecField& f) {
  if (f.required) return "required";
  if (!f.defaultNote.empty()) return std::string(f.defaultNote);
  if (!f.get) return "";
  return valueText(f.get(JobSpec{}));
}

// "[1, 4096]", ">= 0", "(0, 1]", or the allowed spellings.
std::string allowedText(const SpecField& f) {
  if (!f.allowed.empty()) {
    std::string out;
    for (const std::string& a : f.allowed) out += (out.empty() ? "" : ", ") + (a.empty() ? std::string("\"\"") : a);
    return out;
  }
  if (f.min && f.max) {
    return std::string(f.min->exclusive ? "(" : "[") + num(f.min->value) + ", " + num(f.max->value) +
           (f.max->exclusive ? ")" : "]");
  }
  if (f.min) return std::string(f.min->exclusive ? "> " : ">= ") + num(f.min->value);
  if (f.max) return std::string(f.max->exclusive ? "< " : "<= ") + num(f.max->value);
  return "";
}

std::string descriptionOf(const SpecField& f) {
  std::string d(f.description);
  if (!f.condition.empty()) d += " Only when " + std::string(f.condition) + ".";
  if (!f.rangeNote.empty()) d += " " + std::string(f.rangeNote) + ".";
  const std::string def = defaultText(f);
  if (!def.empty() && def != "required" && f.type != SpecFieldType::kObject) d += " Default: " + def + ".";
  return d;
}

void emitBounds(YAML::Emitter& out, const SpecField& f) {
  const bool integer = f.type == SpecFieldType::kInteger || f.type == SpecFieldType::kIntegerList;
  auto value = [&](double v) {
    if (integer) {
      out << static_cast<int64_t>(v);
    } else {
      out << num(v);
    }
  };
  if (f.min) {
    out << YAML::Key << "minimum" << YAML::Value;
    value(f.min->value);
    if (f.min->exclusive) out << YAML::Key << "exclusiveMinimum" << YAML::Value << true;
  }
  if (f.max) {
    out << YAML::Key << "maximum" << YAML::Value;
    value(f.max->value);
    if (f.max->exclusive) out << YAML::Key << "exclusiveMaximum" << YAML::Value << true;
  }
  if (!f.allowed.empty()) {
    out << YAML::Key << "enum" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    size_t longest = 0;
    for (const std::string& a : f.allowed) {
      out << a;
      longest = std::max(longest, a.size());
    }
    out << YAML::EndSeq;
    // Bounds the cost the API server estimates for a CEL rule that reads the field (Note [CRD
    // admission rules]).
    out << YAML::Key << "maxLength" << YAML::Value << longest;
  } else if (f.maxLength > 0) {
    out << YAML::Key << "maxLength" << YAML::Value << f.maxLength;
  }
}

// x-kubernetes-validations: the admission rules on the node at `path` (job_spec_cel_rules.h).
void emitRules(YAML::Emitter& out, std::string_view path) {
  const std::vector<const SpecCelRule*> rules = jobSpecCelRulesAt(path);
  if (rules.empty()) return;
  out << YAML::Key << "x-kubernetes-validations" << YAML::Value << YAML::BeginSeq;
  for (const SpecCelRule* r : rules) {
    out << YAML::BeginMap << YAML::Key << "rule" << YAML::Value << r->rule;
    out << YAML::Key << "message" << YAML::Value << celRuleMessage(*r);
    if (!r->fieldPath.empty()) out << YAML::Key << "fieldPath" << YAML::Value << r->fieldPath;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void emitSchema(YAML::Emitter& out, const SpecField& f);

// type: object with the fields under `path` as properties (and their required ones).
void emitProperties(YAML::Emitter& out, std::string_view path) {
  std::vector<const SpecField*> children = jobSpecChildren(path);
  std::vector<std::string> required;
  const size_t skip = path.size() + 1;
  for (const SpecField* c : children) {
    if (c->required) required.emplace_back(c->path.substr(skip));
  }
  if (!required.empty()) {
    out << YAML::Key << "required" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& r : required) out << r;
    out << YAML::EndSeq;
  }
  out << YAML::Key << "properties" << YAML::Value << YAML::BeginMap;
  for (const SpecField* c : children) {
    if (c->type == SpecFieldType::kIgnored) continue;
    out << YAML::Key << std::string(c->path.substr(skip)) << YAML::Value;
    emitSchema(out, *c);
  }
  out << YAML::EndMap;
}

void emitSchema(YAML::Emitter& out, const SpecField& f) {
  out << YAML::BeginMap;
  const std::string description = descriptionOf(f);
  switch (f.type) {
    case SpecFieldType::kObject:
      out << YAML::Key << "type" << YAML::Value << "object";
      out << YAML::Key << "description" << YAML::Value << description;
      emitProperties(out, f.path);
      emitRules(out, f.path);
      break;
    case SpecFieldType::kObjectList:
      out << YAML::Key << "type" << YAML::Value << "array";
      out << YAML::Key << "description" << YAML::Value << description;
      out << YAML::Key << "items" << YAML::Value << YAML::BeginMap << YAML::Key << "type" << YAML::Value << "object";
      if (f.singleKey) {
        out << YAML::Key << "minProperties" << YAML::Value << 1;
        out << YAML::Key << "maxProperties" << YAML::Value << 1;
      }
      emitProperties(out, std::string(f.path) + "[]");
      out << YAML::EndMap;
      break;
    case SpecFieldType::kStringMap:
    case SpecFieldType::kQuantityMap:
      out << YAML::Key << "type" << YAML::Value << "object";
      out << YAML::Key << "description" << YAML::Value << description;
      out << YAML::Key << "additionalProperties" << YAML::Value << YAML::BeginMap;
      if (f.type == SpecFieldType::kStringMap) {
        out << YAML::Key << "type" << YAML::Value << "string";
      } else {
        out << YAML::Key << "anyOf" << YAML::Value << YAML::Flow << YAML::BeginSeq << YAML::BeginMap << YAML::Key
            << "type" << YAML::Value << "integer" << YAML::EndMap << YAML::BeginMap << YAML::Key << "type"
            << YAML::Value << "string" << YAML::EndMap << YAML::EndSeq;
        out << YAML::Key << "x-kubernetes-int-or-string" << YAML::Value << true;
        out << YAML::Key << "pattern" << YAML::Value << YAML::SingleQuoted << kQuantityPattern;
      }
      out << YAML::EndMap;
      break;
    case SpecFieldType::kKubeObject:
    case SpecFieldType::kKubeObjectList:
      // Note [Carried Kubernetes objects]: the API server keeps every field; validate() checks.
      if (f.type == SpecFieldType::kKubeObjectList) {
        out << YAML::Key << "type" << YAML::Value << "array";
        out << YAML::Key << "description" << YAML::Value << description;
        out << YAML::Key << "items" << YAML::Value << YAML::BeginMap;
      }
      out << YAML::Key << "type" << YAML::Value << "object";
      if (f.type == SpecFieldType::kKubeObject) out << YAML::Key << "description" << YAML::Value << description;
      out << YAML::Key << "x-kubernetes-preserve-unknown-fields" << YAML::Value << true;
      if (f.type == SpecFieldType::kKubeObjectList) out << YAML::EndMap;
      break;
    default:
      if (isList(f.type)) {
        out << YAML::Key << "type" << YAML::Value << "array";
        out << YAML::Key << "description" << YAML::Value << description;
        if (f.listLength > 0) {
          out << YAML::Key << "minItems" << YAML::Value << f.listLength;
          out << YAML::Key << "maxItems" << YAML::Value << f.listLength;
        }
        out << YAML::Key << "items" << YAML::Value << YAML::BeginMap << YAML::Key << "type" << YAML::Value
            << scalarType(f.type);
        emitBounds(out, f);
        out << YAML::EndMap;
      } else {
        out << YAML::Key << "type" << YAML::Value << scalarType(f.type);
        out << YAML::Key << "description" << YAML::Value << description;
        emitBounds(out, f);
      }
  }
  out << YAML::EndMap;
}

std::string escapeCell(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

namespace {

// `text` with the line holding `placeholder` replaced by `yaml` (one key and its value) at the
// placeholder's indentation. InvalidArgument when the template has no such line.
Result<std::string> replacePlaceholder(std::string_view text, std::string_view placeholder, const std::string& yaml) {
  const size_t at = text.find(placeholder);
  if (at == std::string_view::npos) {
    return invalidArgument("the CRD template has no line '" + std::string(placeholder) + "'");
  }
  const size_t lineStart = text.rfind('\n', at) + 1;  // npos + 1 == 0 on the first line
  const std::string indent(at - lineStart, ' ');
  std::istringstream lines(yaml);
  std::string block;
  for (std::string line; std::getline(lines, line);) block += indent + line + "\n";
  const size_t lineEnd = text.find('\n', at);
  std::string result(text.substr(0, lineStart));
  result += block;
  if (lineEnd != std::string_view::npos) result += text.substr(lineEnd + 1);
  return result;
}

}  // namespace

Result<std::string> renderJobSpecCrd(std::string_view crdTemplate) {
  YAML::Emitter spec;
  spec << YAML::BeginMap << YAML::Key << "spec" << YAML::Value;
  emitSchema(spec, *findJobSpecField("spec"));
  spec << YAML::EndMap;
  DDP_ASSIGN_OR_RETURN(std::string crd, replacePlaceholder(crdTemplate, kCrdSpecPlaceholder, spec.c_str()));
  YAML::Emitter rules;
  rules << YAML::BeginMap;
  emitRules(rules, "");
  rules << YAML::EndMap;
  return replacePlaceholder(crd, kCrdDocumentRulesPlaceholder, rules.c_str());
}

std::string jobSpecFieldTableMarkdown() {
  std::string out = "| Field | Type | Default | Allowed | Description |\n|---|---|---|---|---|\n";
  for (const SpecField& f : jobSpecFields()) {
    if (f.type == SpecFieldType::kIgnored) continue;
    std::string d(f.description);
    if (!f.condition.empty()) d += " Only when " + std::string(f.condition) + ".";
    if (!f.rangeNote.empty()) d += " " + std::string(f.rangeNote) + ".";
    out += "| `" + std::string(f.path) + "` | " + specFieldTypeName(f.type) + " | " + escapeCell(defaultText(f)) + " | " +
           escapeCell(allowedText(f)) + " | " + escapeCell(d) + " |\n";
  }
  return out;
}

Result<std::string> renderJobSpecDocs(std::string_view doc) {
  const size_t begin = doc.find(kDocsTableBegin);
  const size_t end = doc.find(kDocsTableEnd);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) {
    return invalidArgument("the document has no '" + std::string(kDocsTableBegin) + "' ... '" +
                           std::string(kDocsTableEnd) + "' region");
  }
  const size_t bodyStart = begin + kDocsTableBegin.size();
  return std::string(doc.substr(0, bodyStart)) + "\n" + jobSpecFieldTableMarkdown() + std::string(doc.substr(end));
}

}  // namespace ddp
