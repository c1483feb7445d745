// The plain checks of the field table (Note [Job spec field table]): every bound field's range,
// finiteness (and the float range of a single-precision one) and allowed spellings, one error per
// field, naming it. Part of JobSpec::validate(); the cross-field rules are job_spec_validate.cc's.
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_fields.h"

namespace ddp {
namespace {
std::string num(double v) { return specNumberText(v); }
}  // namespace

// The bound `v` breaks, as "must be >= 1 s" / "must be <= 604800 (7 days)", with the field's
// note ("0: no clipping"); empty when `v` is in range.
std::string specRangeError(const SpecField& f, double v) {
  std::string text;
  const std::string unit = f.unit.empty() ? "" : " " + std::string(f.unit);
  if (f.min && (f.min->exclusive ? v <= f.min->value : v < f.min->value)) {
    text = std::string("must be ") + (f.min->exclusive ? "> " : ">= ") + num(f.min->value) + unit;
  } else if (f.max && (f.max->exclusive ? v >= f.max->value : v > f.max->value)) {
    text = std::string("must be ") + (f.max->exclusive ? "< " : "<= ") + num(f.max->value) + unit;
    if (!f.max->note.empty()) text += " (" + std::string(f.max->note) + ")";
  } else {
    return "";
  }
  if (!f.rangeNote.empty()) text += " (" + std::string(f.rangeNote) + ")";
  return text + ", got " + num(v);
}

namespace {

// One number: finite (in single precision when the worker keeps a float), then in range.
void checkNumber(const SpecField& f, const std::string& path, double v, std::vector<SpecError>* out) {
  if (!std::isfinite(v)) {
    out->push_back({path, "must be a finite number (got " + num(v) + ")"});
    return;
  }
  if (f.singlePrecision && std::fabs(v) > FLT_MAX) {
    out->push_back({path, "must be a finite number in single precision, at most " + num(FLT_MAX) +
                              " in magnitude (got " + num(v) + ")"});
    return;
  }
  if (std::string e = specRangeError(f, v); !e.empty()) out->push_back({path, e});
}

void checkField(const SpecField& f, const JobSpec& spec, std::vector<SpecError>* out) {
  const SpecValue v = f.get(spec);
  const std::string path(f.path);
  if (const auto* x = std::get_if<int64_t>(&v)) {
    if (std::string e = specRangeError(f, static_cast<double>(*x)); !e.empty()) out->push_back({path, e});
  } else if (const auto* d = std::get_if<double>(&v)) {
    checkNumber(f, path, *d, out);
  } else if (const auto* xs = std::get_if<std::vector<int64_t>>(&v)) {
    for (size_t i = 0; i < xs->size(); ++i) {
      const std::string e = specRangeError(f, static_cast<double>((*xs)[i]));
      if (!e.empty()) out->push_back({path + "[" + std::to_string(i) + "]", e});
    }
  } else if (const auto* ds = std::get_if<std::vector<double>>(&v)) {
    for (size_t i = 0; i < ds->size(); ++i) checkNumber(f, path + "[" + std::to_string(i) + "]", (*ds)[i], out);
  } else if (const auto* s = std::get_if<std::string>(&v); s != nullptr && !f.allowed.empty() && !f.enumeration) {
    bool known = false;
    std::string list;
    for (const std::string& a : f.allowed) {
      known = known || a == *s;
      list += (list.empty() ? "" : ", ") + a;
    }
    if (!known) out->push_back({path, "must be one of " + list + " (got '" + *s + "')"});
  }
}

}  // namespace

void checkJobSpecFields(const JobSpec& spec, std::vector<SpecError>* errors) {
  for (const SpecField& f : jobSpecFields()) {
    if (!f.get || f.checkedByRule) continue;
    // A field that is not allowed here is not checked (its parent's condition neither).
    bool applies = true;
    for (std::string_view p = f.path; applies && !p.empty();) {
      const SpecField* at = findJobSpecField(p);
      if (at != nullptr && at->onlyWhen && !at->onlyWhen(spec)) applies = false;
      const size_t cut = p.find_last_of('.');
      p = cut == std::string_view::npos ? std::string_view() : p.substr(0, cut);
    }
    if (applies) checkField(f, spec, errors);
  }
}

}  // namespace ddp
