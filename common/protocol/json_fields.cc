#include "common/protocol/json_fields.h"

#include <cmath>

namespace ddp::protocol {

std::string dumpJson(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json jsonNumber(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Result<Json> parseJsonObject(std::string_view text, const char* what) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalidArgument(std::string(what) + ": not valid JSON");
  if (!j.is_object()) return invalidArgument(std::string(what) + ": not a JSON object");
  return j;
}

Status JsonFields::getInt(const char* key, int64_t* out, bool required) const {
  const Json* v = find(key);
  if (v == nullptr) return missing(key, required);
  const bool ok = reading_ == Reading::kStrict ? v->is_number_integer() : v->is_number();
  if (!ok) return wrong(key, "an integer");
  *out = v->get<int64_t>();
  return Status::ok();
}

Status JsonFields::getInt(const char* key, int* out, bool required) const {
  int64_t v = *out;
  DDP_RETURN_IF_ERROR(getInt(key, &v, required));
  *out = static_cast<int>(v);
  return Status::ok();
}

Status JsonFields::getDouble(const char* key, double* out, bool required) const {
  const Json* v = find(key);
  if (v == nullptr) return missing(key, required);
  if (v->is_null()) {
    *out = std::nan("");
    return Status::ok();
  }
  if (!v->is_number()) return wrong(key, "a number");
  *out = v->get<double>();
  return Status::ok();
}

Status JsonFields::getString(const char* key, std::string* out, bool required) const {
  const Json* v = find(key);
  if (v == nullptr) return missing(key, required);
  if (!v->is_string()) return wrong(key, "a string");
  *out = v->get<std::string>();
  return Status::ok();
}

Status JsonFields::getBool(const char* key, bool* out, bool required) const {
  const Json* v = find(key);
  if (v == nullptr) return missing(key, required);
  if (!v->is_boolean()) return wrong(key, "true or false");
  *out = v->get<bool>();
  return Status::ok();
}

Status JsonFields::getOptionalDouble(const char* key, std::optional<double>* out) const {
  const Json* v = find(key);
  if (v == nullptr || v->is_null()) return Status::ok();
  if (!v->is_number()) return wrong(key, "a number");
  *out = v->get<double>();
  return Status::ok();
}

const Json* JsonFields::object(const char* key) const {
  const Json* v = find(key);
  return v != nullptr && v->is_object() ? v : nullptr;
}

const Json* JsonFields::array(const char* key) const {
  const Json* v = find(key);
  return v != nullptr && v->is_array() ? v : nullptr;
}

Result<JsonFields> JsonFields::child(const char* key, const Json& value) const {
  if (!value.is_object()) return invalidArgument(at(key) + ": expected an object");
  return JsonFields(value, at(key), reading_);
}

Result<JsonFields> JsonFields::element(const char* key, size_t i, const Json& value) const {
  const std::string where = at(key) + "[" + std::to_string(i) + "]";
  if (!value.is_object()) return invalidArgument(where + ": expected an object");
  return JsonFields(value, where, reading_);
}

const Json* JsonFields::find(const char* key) const {
  auto it = o_.find(key);
  if (it == o_.end()) return nullptr;
  if (reading_ == Reading::kTolerant && it->is_null()) return nullptr;
  return &*it;
}

Status JsonFields::missing(const char* key, bool required) const {
  return required ? invalidArgument(at(key) + ": missing") : Status::ok();
}

Status JsonFields::wrong(const char* key, const char* expected) const {
  return invalidArgument(at(key) + ": expected " + expected);
}

}  // namespace ddp::protocol
