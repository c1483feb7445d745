#pragma once
// JsonFields: the one reader of the protocol's JSON objects (both sides' codecs, common/protocol/).
// A field read names its place in the message ("heartbeat.lastShard.rank") in every error.
//
// Two readings, because the two sides have always read differently (wire format unchanged):
//  - kStrict (the worker's answers, the checkpoint reports): a `required` field must be there;
//    a present field must have the right type (an integer field takes integers only; null
//    reads as NaN in a number field and is wrong elsewhere).
//  - kTolerant (the controller's reading of a heartbeat, which older workers send with fewer
//    fields): absent or null leaves the output as it is; an integer field takes any number
//    (truncated); a present field of another type is still an error.
// Thread model: a view over a caller-owned JSON object; pure.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ddp::protocol {

using Json = nlohmann::json;

// The text of `j` with invalid UTF-8 replaced (dump() would throw on it).
std::string dumpJson(const Json& j);
// A finite number, or null (JSON has no NaN or infinity).
Json jsonNumber(double v);
// `text` parsed without exceptions: InvalidArgument "<what>: not valid JSON" / "not a JSON object".
Result<Json> parseJsonObject(std::string_view text, const char* what);

enum class Reading { kStrict, kTolerant };

class JsonFields {
 public:
  JsonFields(const Json& object, std::string where, Reading reading = Reading::kStrict)
      : o_(object), where_(std::move(where)), reading_(reading) {}

  Status getInt(const char* key, int64_t* out, bool required = true) const;
  Status getInt(const char* key, int* out, bool required = true) const;
  Status getDouble(const char* key, double* out, bool required = true) const;  // strict: null -> NaN
  Status getString(const char* key, std::string* out, bool required = true) const;
  Status getBool(const char* key, bool* out, bool required = true) const;
  // Absent or null: left as it is (an older sender has no such field).
  Status getOptionalDouble(const char* key, std::optional<double>* out) const;
  // nullptr when absent, null or of another kind.
  const Json* object(const char* key) const;
  const Json* array(const char* key) const;
  // The reader of `key`'s object or of element `i` of `key`'s array; errors when it is not an object.
  Result<JsonFields> child(const char* key, const Json& value) const;
  Result<JsonFields> element(const char* key, size_t i, const Json& value) const;
  // "<where>.<key>": the name errors give a field.
  std::string at(const char* key) const { return where_ + "." + key; }
  const Json& json() const { return o_; }
  Reading reading() const { return reading_; }

 private:
  // The field, or nullptr when absent (and, tolerant, when null).
  const Json* find(const char* key) const;
  Status missing(const char* key, bool required) const;
  Status wrong(const char* key, const char* expected) const;

  const Json& o_;
  std::string where_;
  Reading reading_;
};

}  // namespace ddp::protocol
