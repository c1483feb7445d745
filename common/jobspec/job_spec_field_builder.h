#pragma once
// Builders for the entries of the job spec field table (job_spec_fields.cc): a field's kind,
// its binding to a JobSpec member, and its constraints, chained:
//
//   integer("spec.data.batchSize", at(&JobSpec::data, &DataSpec::batchSize), "Samples per worker.").atLeast(1)
//
// Not an API: only the table files include it.
// Thread model: used once, while the table is built.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_enums.h"
#include "common/jobspec/job_spec_fields.h"

namespace ddp::spec_fields {

// A reference to the member at the end of a chain of member pointers, for a JobSpec or a
// const JobSpec: at(&JobSpec::data, &DataSpec::batchSize)(spec) is spec.data.batchSize.
template <typename... M>
auto at(M... members) {
  return [=](auto& spec) -> auto& { return (spec.*....*members); };
}

class Field {
 public:
  Field(std::string_view path, SpecFieldType type, std::string_view description) {
    f_.path = path;
    f_.type = type;
    f_.description = description;
  }
  operator SpecField() && { return std::move(f_); }  // NOLINT: the table converts implicitly

  Field&& atLeast(double v) && { return bound(&f_.min, v, false); }
  Field&& above(double v) && { return bound(&f_.min, v, true); }
  Field&& atMost(double v, std::string_view note = {}) && {
    f_.max = SpecBound{v, false, note};
    return std::move(*this);
  }
  Field&& unit(std::string_view u) && { f_.unit = u; return std::move(*this); }
  Field&& below(double v) && { return bound(&f_.max, v, true); }
  Field&& note(std::string_view n) && { f_.rangeNote = n; return std::move(*this); }
  Field&& single() && { f_.singlePrecision = true; return std::move(*this); }
  Field&& required() && { f_.required = true; return std::move(*this); }
  Field&& plain() && { f_.quoted = false; return std::move(*this); }
  Field&& length(size_t n) && { f_.listLength = n; return std::move(*this); }
  Field&& maxLength(size_t n) && { f_.maxLength = n; return std::move(*this); }
  Field&& oneOf(std::vector<std::string> allowed) && { f_.allowed = std::move(allowed); return std::move(*this); }
  // Ranges that the cross-field rules check with their own messages: the table states them for
  // the CRD and the docs only.
  Field&& checkedByRule() && { f_.checkedByRule = true; return std::move(*this); }
  Field&& onlyWhen(std::function<bool(const JobSpec&)> when, std::string_view condition) && {
    f_.onlyWhen = std::move(when);
    f_.condition = condition;
    return std::move(*this);
  }
  Field&& emitWhen(std::function<bool(const JobSpec&)> when) && { f_.emitWhen = std::move(when); return std::move(*this); }
  Field&& whenAbsent(std::function<SpecValue(const JobSpec&)> value, std::string_view doc) && {
    f_.absentDefault = std::move(value);
    f_.defaultNote = doc;
    return std::move(*this);
  }
  Field&& bind(std::function<SpecValue(const JobSpec&)> get, std::function<void(JobSpec&, const SpecValue&)> set) && {
    f_.get = std::move(get);
    f_.set = std::move(set);
    return std::move(*this);
  }
  Field&& parsedOnly(std::vector<std::string> spellings) && { f_.parsedOnly = std::move(spellings); return std::move(*this); }
  Field&& storeRange(int64_t lo, int64_t hi) && {
    f_.storeMin = lo;
    f_.storeMax = hi;
    return std::move(*this);
  }
  Field&& singleKey() && { f_.singleKey = true; return std::move(*this); }
  // The default as the docs say it, for a field without a binding (a list item's).
  Field&& documentedDefault(std::string_view doc) && { f_.defaultNote = doc; return std::move(*this); }
  Field&& enumerated() && { f_.enumeration = true; return std::move(*this); }
  Field&& list(std::function<void(job_spec_detail::Parser&, const YAML::Node&, JobSpec&)> parse,
               std::function<void(YAML::Emitter&, const JobSpec&)> emit) && {
    f_.parseList = std::move(parse);
    f_.emitList = std::move(emit);
    return std::move(*this);
  }

 private:
  Field&& bound(std::optional<SpecBound>* b, double v, bool exclusive) {
    *b = SpecBound{v, exclusive};
    return std::move(*this);
  }
  SpecField f_;
};

inline Field object(std::string_view path, std::string_view description) {
  return Field(path, SpecFieldType::kObject, description);
}
inline Field ignored(std::string_view path, std::string_view description) {
  return Field(path, SpecFieldType::kIgnored, description);
}
// A field of a list item ("spec.x[].key"): read and written by its list's own code.
inline Field item(std::string_view path, SpecFieldType type, std::string_view description) {
  return Field(path, type, description);
}

template <typename Ref>
Field integer(std::string_view path, Ref ref, std::string_view description) {
  using T = std::remove_cvref_t<decltype(ref(std::declval<JobSpec&>()))>;
  static_assert(std::is_integral_v<T>);
  constexpr int64_t lo = std::is_unsigned_v<T> ? 0 : static_cast<int64_t>(std::numeric_limits<T>::min());
  constexpr int64_t hi = static_cast<int64_t>(std::min<uint64_t>(std::numeric_limits<T>::max(), INT64_MAX));
  return Field(path, SpecFieldType::kInteger, description)
      .bind([ref](const JobSpec& s) { return SpecValue(static_cast<int64_t>(ref(s))); },
            [ref](JobSpec& s, const SpecValue& v) { ref(s) = static_cast<T>(std::get<int64_t>(v)); })
      .storeRange(lo, hi);
}

// An std::optional<int64_t>: absent from the document, not set (and not emitted).
template <typename Ref>
Field optionalInteger(std::string_view path, Ref ref, std::string_view description) {
  return Field(path, SpecFieldType::kInteger, description)
      .bind([ref](const JobSpec& s) { return ref(s) ? SpecValue(*ref(s)) : SpecValue(); },
            [ref](JobSpec& s, const SpecValue& v) { ref(s) = std::get<int64_t>(v); });
}

template <typename Ref>
Field number(std::string_view path, Ref ref, std::string_view description) {
  return Field(path, SpecFieldType::kNumber, description)
      .bind([ref](const JobSpec& s) { return SpecValue(static_cast<double>(ref(s))); },
            [ref](JobSpec& s, const SpecValue& v) { ref(s) = std::get<double>(v); });
}

template <typename Ref>
Field boolean(std::string_view path, Ref ref, std::string_view description) {
  return Field(path, SpecFieldType::kBoolean, description)
      .bind([ref](const JobSpec& s) { return SpecValue(static_cast<bool>(ref(s))); },
            [ref](JobSpec& s, const SpecValue& v) { ref(s) = std::get<bool>(v); });
}

template <typename Ref>
Field string(std::string_view path, Ref ref, std::string_view description) {
  return Field(path, SpecFieldType::kString, description)
      .bind([ref](const JobSpec& s) { return SpecValue(std::string(ref(s))); },
            [ref](JobSpec& s, const SpecValue& v) { ref(s) = std::get<std::string>(v); });
}

template <typename Ref>
Field integerList(std::string_view path, Ref ref, std::string_view description) {
  return Field(path, SpecFieldType::kIntegerList, description)
      .bind([ref](const JobSpec& s) { return SpecValue(ref(s)); },
            [ref](JobSpec& s, const SpecValue& v) { ref(s) = std::get<std::vector<int64_t>>(v); });
}

template <typename Ref>
Field numberList(std::string_view path, Ref ref, std::string_view description) {
  return Field(path, SpecFieldType::kNumberList, description)
      .bind([ref](const JobSpec& s) { return SpecValue(ref(s)); },
            [ref](JobSpec& s, const SpecValue& v) { ref(s) = std::get<std::vector<double>>(v); });
}

template <typename Ref>
Field stringList(std::string_view path, Ref ref, std::string_view description) {
  return Field(path, SpecFieldType::kStringList, description)
      .bind([ref](const JobSpec& s) { return SpecValue(ref(s)); },
            [ref](JobSpec& s, const SpecValue& v) { ref(s) = std::get<std::vector<std::string>>(v); });
}

template <typename Ref>
Field stringMap(std::string_view path, Ref ref, std::string_view description,
                SpecFieldType type = SpecFieldType::kStringMap) {
  return Field(path, type, description)
      .bind([ref](const JobSpec& s) { return SpecValue(ref(s)); },
            [ref](JobSpec& s, const SpecValue& v) { ref(s) = std::get<std::map<std::string, std::string>>(v); });
}

// A carried Kubernetes object (kKubeObject) or list (kKubeObjectList): a std::string member
// holding its JSON text, absent when empty (Note [Carried Kubernetes objects]).
template <typename Ref>
Field kubeObject(std::string_view path, Ref ref, std::string_view description, bool list = false) {
  return Field(path, list ? SpecFieldType::kKubeObjectList : SpecFieldType::kKubeObject, description)
      .bind([ref](const JobSpec& s) { return ref(s).empty() ? SpecValue() : SpecValue(std::string(ref(s))); },
            [ref](JobSpec& s, const SpecValue& v) { ref(s) = std::get<std::string>(v); })
      .documentedDefault("none");
}

// An enum member, read and written as its spelling in `table`.
template <typename Ref, typename E>
Field enumeration(std::string_view path, Ref ref, const EnumTable<E>& table, std::string_view description) {
  std::vector<std::string> names;
  for (const auto& [name, value] : table) names.push_back(name);
  Field f = Field(path, SpecFieldType::kString, description)
                .bind([ref, &table](const JobSpec& s) { return SpecValue(std::string(enumName(table, ref(s)))); },
                      [ref, &table](JobSpec& s, const SpecValue& v) {
                        for (const auto& [name, value] : table) {
                          if (name == std::get<std::string>(v)) ref(s) = value;
                        }
                      })
                .oneOf(std::move(names))
                .enumerated()
                .plain();
  return f;
}

}  // namespace ddp::spec_fields
