#include "worker/runtime/worker_config.h"

#include <gtest/gtest.h>

#include <map>

namespace ddp::runtime {
namespace {

EnvLookup fakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& n) -> std::optional<std::string> {
    auto it = vars.find(n);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(WorkerConfigTest, FlagsOverrideEnvironment) {
  auto env = fakeEnv({{"DDP_STORE_ADDR", "127.0.0.1:9000"}, {"DDP_JOB_FILE", "/env.yaml"},
                      {"DDP_RANK", "1"}, {"DDP_WORLD_SIZE", "4"}, {"DDP_GENERATION", "2"}});
  auto c = parseWorkerConfig({"ddp-worker", "--rank", "3", "--log-format=json"}, env);
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ(c->storeHost, "127.0.0.1");
  EXPECT_EQ(c->storePort, 9000);
  EXPECT_EQ(c->jobFile, "/env.yaml");
  EXPECT_EQ(c->rank, 3);
  EXPECT_EQ(c->worldSize, 4);
  EXPECT_EQ(c->generation, 2);
  EXPECT_EQ(c->logFormat, LogFormat::kJson);
}

TEST(WorkerConfigTest, ErrorsNameTheFlagAndVariable) {
  auto env = fakeEnv({{"DDP_STORE_ADDR", "localhost:80"}, {"DDP_JOB_FILE", "j.yaml"}, {"DDP_WORLD_SIZE", "2"}});
  auto missingRank = parseWorkerConfig({"w"}, env);
  EXPECT_NE(missingRank.status().message().find("DDP_RANK"), std::string::npos);
  auto badRank = parseWorkerConfig({"w", "--rank", "2"}, env);
  EXPECT_NE(badRank.status().message().find("not in [0, 2)"), std::string::npos);
  auto notInt = parseWorkerConfig({"w", "--rank", "x1"}, env);
  EXPECT_NE(notInt.status().message().find("not an integer"), std::string::npos);
  auto badStore = parseWorkerConfig({"w", "--rank", "0", "--store", "nohost"}, env);
  EXPECT_NE(badStore.status().message().find("DDP_STORE_ADDR"), std::string::npos);
  auto unknown = parseWorkerConfig({"w", "--bogus", "1"}, env);
  EXPECT_NE(unknown.status().message().find("unknown argument '--bogus'"), std::string::npos);
  auto help = parseWorkerConfig({"w", "--help"}, env);
  EXPECT_EQ(help.status().code(), StatusCode::kNotFound);
  EXPECT_NE(help.status().message().find("usage: ddp-worker"), std::string::npos);
  std::string host;
  int port = 0;
  EXPECT_TRUE(parseHostPort("[::1]:8080", "x", &host, &port).isOk());
  EXPECT_EQ(host, "::1");
  EXPECT_FALSE(parseHostPort("h:70000", "x", &host, &port).isOk());
}

}  // namespace
}  // namespace ddp::runtime
