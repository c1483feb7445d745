// JsonFields (common/protocol/json_fields.h), the one reader of the protocol's JSON objects: the
// strict reading (required fields, integers only, null as NaN in a number) and the tolerant one
// (absent or null leaves the output, any number in an integer field), and that every error
// names the field's place in the message; the helpers that write and parse the text.
#include "common/protocol/json_fields.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace ddp::protocol {
namespace {

const Json kMessage = Json::parse(R"({"n": 7, "x": 1.5, "s": "text", "b": true, "nul": null,
                                      "obj": {"k": 1}, "arr": [{"k": 2}, 3]})");

std::string message(const Status& st) { return st.isOk() ? "" : st.message(); }

TEST(JsonFieldsTest, StrictReadsTypedFieldsAndNamesWhatIsWrong) {
  JsonFields f(kMessage, "msg");
  int64_t n = 0;
  double x = 0;
  std::string s;
  bool b = false;
  EXPECT_EQ(message(f.getInt("n", &n)), "");
  EXPECT_EQ(n, 7);
  EXPECT_EQ(message(f.getDouble("x", &x)), "");
  EXPECT_EQ(x, 1.5);
  EXPECT_EQ(message(f.getString("s", &s)), "");
  EXPECT_EQ(s, "text");
  EXPECT_EQ(message(f.getBool("b", &b)), "");
  EXPECT_TRUE(b);
  EXPECT_EQ(message(f.getInt("x", &n)), "msg.x: expected an integer");
  EXPECT_EQ(message(f.getString("n", &s)), "msg.n: expected a string");
  EXPECT_EQ(message(f.getBool("s", &b)), "msg.s: expected true or false");
  EXPECT_EQ(message(f.getInt("absent", &n)), "msg.absent: missing");
  EXPECT_EQ(message(f.getInt("absent", &n, /*required=*/false)), "");
  EXPECT_EQ(n, 7) << "an absent optional field leaves the output";
  EXPECT_EQ(message(f.getDouble("nul", &x)), "");
  EXPECT_TRUE(std::isnan(x)) << "null reads as NaN in a number field";
  EXPECT_EQ(message(f.getString("nul", &s)), "msg.nul: expected a string");
}

TEST(JsonFieldsTest, TolerantTakesAnyNumberAndPassesOverNull) {
  JsonFields f(kMessage, "hb", Reading::kTolerant);
  int64_t n = 0;
  EXPECT_EQ(message(f.getInt("x", &n)), "");
  EXPECT_EQ(n, 1) << "truncated";
  std::string s = "kept";
  EXPECT_EQ(message(f.getString("nul", &s, /*required=*/false)), "");
  EXPECT_EQ(s, "kept");
  double x = 4;
  EXPECT_EQ(message(f.getDouble("nul", &x, /*required=*/false)), "");
  EXPECT_EQ(x, 4);
  EXPECT_EQ(message(f.getDouble("nul", &x)), "hb.nul: missing") << "null counts as absent";
  EXPECT_EQ(message(f.getInt("s", &n)), "hb.s: expected an integer") << "a present field of another type is an error";
  std::optional<double> o;
  EXPECT_EQ(message(f.getOptionalDouble("nul", &o)), "");
  EXPECT_FALSE(o.has_value());
  EXPECT_EQ(message(f.getOptionalDouble("x", &o)), "");
  EXPECT_EQ(o, 1.5);
}

TEST(JsonFieldsTest, NestedReadersNameTheirPlace) {
  JsonFields f(kMessage, "msg");
  EXPECT_NE(f.object("obj"), nullptr);
  EXPECT_EQ(f.object("arr"), nullptr);
  ASSERT_NE(f.array("arr"), nullptr);
  auto child = f.child("obj", *f.object("obj"));
  ASSERT_TRUE(child.isOk());
  int64_t k = 0;
  EXPECT_EQ(message(child->getInt("k", &k)), "");
  EXPECT_EQ(k, 1);
  EXPECT_EQ(message(child->getInt("q", &k)), "msg.obj.q: missing");
  const Json& arr = *f.array("arr");
  auto first = f.element("arr", 0, arr[0]);
  ASSERT_TRUE(first.isOk());
  std::string text;
  EXPECT_EQ(message(first->getString("k", &text)), "msg.arr[0].k: expected a string");
  EXPECT_EQ(message(f.element("arr", 1, arr[1]).status()), "msg.arr[1]: expected an object");
  EXPECT_EQ(message(f.child("n", kMessage["n"]).status()), "msg.n: expected an object");
}

TEST(JsonFieldsTest, TextHelpers) {
  EXPECT_EQ(jsonNumber(std::numeric_limits<double>::quiet_NaN()), Json(nullptr));
  EXPECT_EQ(jsonNumber(std::numeric_limits<double>::infinity()), Json(nullptr));
  EXPECT_EQ(jsonNumber(2.5), Json(2.5));
  EXPECT_NO_THROW(dumpJson(Json(std::string("bad \xff byte"))));
  EXPECT_EQ(message(parseJsonObject("{", "reply").status()), "reply: not valid JSON");
  EXPECT_EQ(message(parseJsonObject("[1]", "reply").status()), "reply: not a JSON object");
  auto ok = parseJsonObject(R"({"a": 1})", "reply");
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ((*ok)["a"], 1);
}

}  // namespace
}  // namespace ddp::protocol
