// YAML -> JobSpec: the parser that collects every error with its field path and location.
// (The emitter, JobSpec::toYaml(), is in job_spec_emit.cc.)
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_json.h"
#include "common/jobspec/job_spec_parser.h"
#include "common/jobspec/kube_object.h"
#include "common/utf8.h"
#include "common/yaml_guard.h"

namespace ddp {
namespace job_spec_detail {

void Parser::parse(const YAML::Node& doc, JobSpec* spec) {
  if (!doc.IsDefined() || doc.IsNull()) {
    errors.push_back({"", "empty document (expected a DDPJob mapping)", 1, 1});
    return;
  }
  parseObject(doc, "", spec);
}

void Parser::parseObject(const YAML::Node& n, const std::string& path, JobSpec* spec) {
  if (!mapping(n, path)) return;
  const size_t skip = path.empty() ? 0 : path.size() + 1;
  for (const SpecField* f : jobSpecChildren(path)) {
    const std::string key(f->path.substr(skip));
    const YAML::Node v = n[key];
    if (!v) {
      if (f->required) fail(n, std::string(f->path), "required field is missing");
      if (f->absentDefault && f->set) f->set(*spec, f->absentDefault(*spec));
      continue;
    }
    if (f->onlyWhen && !f->onlyWhen(*spec)) {
      fail(v, std::string(f->path), "only valid when " + std::string(f->condition));
      continue;
    }
    parseField(*f, v, spec);
  }
}

bool Parser::readKubeObject(const YAML::Node& v, const std::string& path, bool list, std::string* out) {
  if (list ? !v.IsSequence() : !v.IsMap()) {
    fail(v, path, std::string("expected ") + (list ? "a sequence of mappings" : "a mapping") + ", got " + describe(v));
    return false;
  }
  if (list) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].IsMap()) continue;
      fail(v[i], path + "[" + std::to_string(i) + "]", "expected a mapping, got " + describe(v[i]));
      return false;
    }
  }
  auto json = yamlToJson(v, path);
  if (!json.isOk()) {
    fail(v, path, json.status().message());
    return false;
  }
  *out = json->dump();
  return true;
}

bool Parser::readEnumeration(const SpecField& f, const YAML::Node& v, std::string* out) {
  if (!readString(v, std::string(f.path), out)) return false;
  const auto known = [&](const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), *out) != names.end();
  };
  if (known(f.allowed) || known(f.parsedOnly)) return true;
  std::string list;
  for (const std::string& a : f.allowed) list += (list.empty() ? "" : ", ") + a;
  fail(v, std::string(f.path), "must be one of " + list + " (got '" + *out + "')");
  return false;
}

void Parser::parseField(const SpecField& f, const YAML::Node& v, JobSpec* spec) {
  const std::string path(f.path);
  bool ok = false;
  SpecValue value;
  switch (f.type) {
    case SpecFieldType::kObject: parseObject(v, path, spec); return;
    case SpecFieldType::kIgnored: return;
    case SpecFieldType::kObjectList: f.parseList(*this, v, *spec); return;
    case SpecFieldType::kString: {
      std::string s;
      ok = f.enumeration ? readEnumeration(f, v, &s) : readString(v, path, &s);
      value = std::move(s);
      break;
    }
    case SpecFieldType::kInteger: {
      int64_t x = 0;
      ok = readInt(v, path, &x, f.storeMin, f.storeMax);
      value = x;
      break;
    }
    case SpecFieldType::kNumber: {
      double x = 0;
      ok = readDouble(v, path, &x);
      value = x;
      break;
    }
    case SpecFieldType::kBoolean: {
      bool b = false;
      ok = readBool(v, path, &b);
      value = b;
      break;
    }
    case SpecFieldType::kIntegerList: {
      std::vector<int64_t> xs;
      ok = readIntList(v, path, &xs);
      value = std::move(xs);
      break;
    }
    case SpecFieldType::kNumberList: {
      std::vector<double> xs;
      ok = readNumberList(v, path, f.listLength, &xs);
      value = std::move(xs);
      break;
    }
    case SpecFieldType::kStringList: {
      std::vector<std::string> xs;
      ok = readStringList(v, path, &xs);
      value = std::move(xs);
      break;
    }
    case SpecFieldType::kStringMap:
    case SpecFieldType::kQuantityMap: {
      std::map<std::string, std::string> m;
      ok = readStringMap(v, path, &m);
      value = std::move(m);
      break;
    }
    case SpecFieldType::kKubeObject:
    case SpecFieldType::kKubeObjectList: {
      std::string text;
      ok = readKubeObject(v, path, f.type == SpecFieldType::kKubeObjectList, &text);
      value = std::move(text);
      break;
    }
  }
  if (ok && f.set) f.set(*spec, value);
}

}  // namespace job_spec_detail

namespace {

// True when `a` equals `b` or one is a path prefix of the other ("x.y" vs "x.y.z" / "x.y[0]").
bool overlaps(const std::string& a, const std::string& b) {
  const std::string& s = a.size() <= b.size() ? a : b;
  const std::string& l = a.size() <= b.size() ? b : a;
  if (l.compare(0, s.size(), s) != 0) return false;
  return l.size() == s.size() || l[s.size()] == '.' || l[s.size()] == '[';
}

// The document-level refusals made before YAML reads the text: a control character (YAML allows
// none but tab, LF and CR, and no DEL; leading NULs also make yaml-cpp read the text as UTF-32,
// whose decoding yields strings that are not UTF-8), invalid UTF-8 (Note [Invalid UTF-8]), and
// anchors, aliases or deep nesting (Note [YAML guard]).
std::optional<SpecError> documentShapeError(std::string_view yaml) {
  const size_t control = std::find_if(yaml.begin(), yaml.end(), [](char ch) {
                           const auto c = static_cast<unsigned char>(ch);
                           return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F;
                         }) - yaml.begin();
  if (control < yaml.size()) {
    const TextPosition at = textPosition(yaml, control);
    char code[8];
    std::snprintf(code, sizeof code, "0x%02X", static_cast<unsigned char>(yaml[control]));
    return SpecError{"", "the job document holds a control character (" + std::string(code) + ") at byte " +
                             std::to_string(control) + ", which YAML does not allow",
                     at.line, at.column};
  }
  if (const size_t bad = invalidUtf8Offset(yaml); bad != std::string_view::npos) {
    const TextPosition at = textPosition(yaml, bad);
    return SpecError{"", "the job document is not valid UTF-8: " + describeInvalidUtf8(yaml, bad), at.line,
                     at.column};
  }
  if (const YamlGuardError shape = checkYamlShape(yaml); !shape.message.empty()) {
    return SpecError{"", shape.message, shape.line, shape.column};
  }
  return std::nullopt;
}


// Reads the document along the field table into *spec: shape, type and "only valid when"
// errors go to parser->errors (with their locations), nothing else is checked.
void readDocument(std::string_view yaml, job_spec_detail::Parser* parser, JobSpec* spec) {
  spec->apiVersion.clear();
  spec->kind.clear();
  std::vector<JsonColumnShift> shifts;  // Note [JSON job documents]
  if (auto bad = documentShapeError(yaml)) {
    parser->errors.push_back(std::move(*bad));
    return;
  }
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(rewriteJsonSurrogatePairs(yaml, &shifts));
    // A trailing "---" yields an empty document: only documents with content count.
    docs.erase(std::remove_if(docs.begin(), docs.end(), [](const YAML::Node& d) { return d.IsNull(); }),
               docs.end());
    if (docs.size() > 1) {
      const YAML::Mark at = docs[1].Mark();
      parser->errors.push_back({"", "the body holds " + std::to_string(docs.size()) +
                                        " YAML documents; submit one job per document (the second starts here)",
                                at.line + 1, at.column + 1});
    } else {
      parser->parse(docs.empty() ? YAML::Node() : docs[0], spec);
    }
  } catch (const YAML::Exception& e) {
    parser->errors.push_back({"", "YAML syntax error: " + e.msg, e.mark.line + 1, e.mark.column + 1});
  }
  if (!shifts.empty()) {
    for (SpecError& e : parser->errors) e.column = originalColumn(shifts, e.line, e.column);
    for (auto& [path, at] : parser->marks) at.second = originalColumn(shifts, at.first, at.second);
  }
}

}  // namespace

Result<JobSpec> decodeJobSpec(std::string_view yaml) {
  job_spec_detail::Parser parser;
  JobSpec spec;
  readDocument(yaml, &parser, &spec);
  if (!parser.errors.empty()) return specErrorsToStatus(parser.errors);
  return spec;
}

Result<JobSpec> parseJobSpec(std::string_view yaml, std::vector<SpecError>* errorsOut) {
  job_spec_detail::Parser parser;
  JobSpec spec;
  readDocument(yaml, &parser, &spec);
  // A document-level error (syntax, empty, not a mapping) leaves nothing worth validating.
  const bool documentError = std::any_of(parser.errors.begin(), parser.errors.end(),
                                         [](const SpecError& e) { return e.path.empty(); });
  std::vector<SpecError> all = parser.errors;
  if (!documentError) {
    std::vector<SpecError> semantic;
    (void)spec.validate(&semantic);
    for (SpecError& e : semantic) {
      // A field that failed to parse kept its default: its follow-on errors would mislead.
      if (std::any_of(parser.errors.begin(), parser.errors.end(),
                      [&](const SpecError& pe) { return overlaps(pe.path, e.path); })) {
        continue;
      }
      // Locate at the field, or at the closest enclosing field present in the document.
      for (std::string p = e.path; !p.empty();) {
        auto it = parser.marks.find(p);
        if (it != parser.marks.end()) {
          e.line = it->second.first;
          e.column = it->second.second;
          break;
        }
        size_t cut = p.find_last_of(".[");
        p = cut == std::string::npos ? "" : p.substr(0, cut);
      }
      all.push_back(std::move(e));
    }
  }
  if (errorsOut) *errorsOut = all;
  if (!all.empty()) return specErrorsToStatus(all);
  return spec;
}

}  // namespace ddp
