// The API token in a Kubernetes Secret (Note [Token Secret]) against FakeKubeApiServer (FAKED:
// the API server): created once with a fresh token and read back the same by every later start
// (as a second replica or a restart would); a Secret another writer made is taken as it is; a
// broken one is an error naming it; base64 against known vectors (RFC 4648).
#include "controller/kubernetes/token_secret.h"

#include <gtest/gtest.h>

#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

TEST(KubernetesBase64Test, KnownVectors) {
  const std::pair<std::string, std::string> vectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"}, {std::string("\xff\x00\x10", 3), "/wAQ"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64Encode(plain), encoded);
    auto back = base64Decode(encoded);
    ASSERT_TRUE(back.isOk()) << encoded;
    EXPECT_EQ(*back, plain);
  }
  for (const char* bad : {"Zm9", "Zm9v!A==", "Z=9v", "Zg==Zg=="}) EXPECT_FALSE(base64Decode(bad).isOk()) << bad;
}

class KubernetesTokenSecretTest : public testing::FakeApiTest {};

TEST_F(KubernetesTokenSecretTest, CreatedOnceThenReadByEveryStart) {
  auto first = loadOrCreateTokenSecret(*client_, "ml", "ddp-api-token");
  ASSERT_TRUE(first.isOk()) << first.status();
  EXPECT_EQ(first->size(), 64u);  // 32 random bytes as hex
  auto stored = api_.object("secrets", "ml", "ddp-api-token");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ((*stored)["data"]["token"], base64Encode(*first));
  auto second = loadOrCreateTokenSecret(*client_, "ml", "ddp-api-token");
  ASSERT_TRUE(second.isOk()) << second.status();
  EXPECT_EQ(*second, *first);
  auto elsewhere = loadOrCreateTokenSecret(*client_, "team-b", "ddp-api-token");
  ASSERT_TRUE(elsewhere.isOk());
  EXPECT_NE(*elsewhere, *first);
}

TEST_F(KubernetesTokenSecretTest, ASecretSomeoneElseWroteIsTakenAsItIs) {
  api_.put("secrets", "ml", {{"metadata", {{"name", "mine"}}}, {"data", {{"token", base64Encode("s3cret\n")}}}});
  auto token = loadOrCreateTokenSecret(*client_, "ml", "mine");
  ASSERT_TRUE(token.isOk()) << token.status();
  EXPECT_EQ(*token, "s3cret");  // as a file would hold it, the newline dropped
}

TEST_F(KubernetesTokenSecretTest, ABrokenSecretIsAnErrorNamingIt) {
  api_.put("secrets", "ml", {{"metadata", {{"name", "nokey"}}}, {"data", {{"api-token", base64Encode("x")}}}});
  api_.put("secrets", "ml", {{"metadata", {{"name", "empty"}}}, {"data", {{"token", ""}}}});
  api_.put("secrets", "ml", {{"metadata", {{"name", "garbled"}}}, {"data", {{"token", "not base64"}}}});
  for (const char* name : {"nokey", "empty", "garbled"}) {
    auto token = loadOrCreateTokenSecret(*client_, "ml", name);
    ASSERT_FALSE(token.isOk()) << name;
    EXPECT_EQ(token.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(token.status().message().find(std::string("the token Secret ml/") + name), std::string::npos)
        << token.status();
  }
}

}  // namespace
}  // namespace ddp::controller::kube
