#include "worker/control/worker_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "common/launch/worker_env.h"

namespace ddp::runtime {
namespace {

EnvLookup fakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& n) -> std::optional<std::string> {
    auto it = vars.find(n);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// The environment a launcher builds (common/launch/worker_env.h), as a lookup.
EnvLookup launcherEnv(const launch::WorkerEnv& we) {
  std::map<std::string, std::string> vars;
  for (const std::string& kv : launch::workerEnvironment(we)) {
    const auto eq = kv.find('=');
    vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return fakeEnv(vars);
}

launch::WorkerEnv fullEnv() {
  launch::WorkerEnv we;
  we.controllerUrl = "http://10.0.0.5:8080";
  we.jobName = "fmnist";
  we.jobToken = "tok-env";
  we.workerId = "fmnist-w1";
  we.advertiseAddress = "10.0.0.7";
  we.logFormat = "json";
  we.logLevel = "debug";
  we.checkpointDir = "/ckpt";
  we.commThreadPriority = "normal";
  return we;
}

bool mentions(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

TEST(WorkerConfigTest, ReadsTheLauncherEnvironmentContract) {
  auto c = parseWorkerConfig({"ddp-worker"}, launcherEnv(fullEnv()));
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ(c->controllerUrl, "http://10.0.0.5:8080");
  EXPECT_EQ(c->jobName, "fmnist");
  EXPECT_EQ(c->jobToken, "tok-env");
  EXPECT_EQ(c->workerId, "fmnist-w1");
  EXPECT_EQ(c->advertiseAddress, "10.0.0.7");
  EXPECT_EQ(c->logFormat, LogFormat::kJson);
  EXPECT_EQ(c->logLevel, log::Level::kDebug);
  EXPECT_EQ(c->checkpointDirOverride, "/ckpt");
  EXPECT_EQ(c->commThreadPriority, CommThreadPriority::kNormal);
  EXPECT_TRUE(c->sameHostMemory);  // unset: on
}

TEST(WorkerConfigTest, DefaultsWhenOptionalVariablesAreUnset) {
  launch::WorkerEnv we;
  we.controllerUrl = "http://127.0.0.1:9000/";
  we.jobName = "j";
  we.jobToken = "t";
  we.workerId = "j-w0";
  we.advertiseAddress.clear();  // not set at all
  auto c = parseWorkerConfig({"w"}, launcherEnv(we));
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ(c->controllerUrl, "http://127.0.0.1:9000");  // trailing '/' dropped
  EXPECT_EQ(c->advertiseAddress, kDefaultAdvertiseAddress);
  EXPECT_FALSE(c->logFormat.has_value());  // the job's spec.logFormat rules
  EXPECT_EQ(c->logLevel, log::Level::kInfo);
  EXPECT_FALSE(c->commThreadPriority.has_value());  // the job's spec.commThreadPriority rules
  EXPECT_TRUE(c->checkpointDirOverride.empty());
}

// Note [Several ranks per pod]: a pod's environment names its ranks instead of one worker.
TEST(WorkerConfigTest, APodOfSeveralRanksNamesThemInsteadOfOneWorkerId) {
  launch::WorkerEnv we = fullEnv();
  we.workerId.clear();
  we.podWorkerIds = {"fmnist-w2", "fmnist-w3"};
  auto c = parseWorkerConfig({"ddp-worker"}, launcherEnv(we));
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ(c->podWorkerIds, (std::vector<std::string>{"fmnist-w2", "fmnist-w3"}));
  EXPECT_TRUE(c->workerId.empty());
  EXPECT_FALSE(c->localRank.has_value());
  // Both a pod's ids and one worker's id: refused, naming both.
  we.workerId = "fmnist-w1";
  auto both = parseWorkerConfig({"ddp-worker"}, launcherEnv(we));
  ASSERT_FALSE(both.isOk());
  EXPECT_TRUE(mentions(both.status(), "DDP_POD_WORKER_IDS")) << both.status();
  EXPECT_TRUE(mentions(both.status(), "DDP_WORKER_ID")) << both.status();
  auto dup = parseWorkerConfig({"ddp-worker", "--worker-id=", "--pod-worker-ids", "a,a"}, launcherEnv(fullEnv()));
  ASSERT_FALSE(dup.isOk());
  EXPECT_TRUE(mentions(dup.status(), "appears twice")) << dup.status();
  auto empty = parseWorkerConfig({"ddp-worker", "--pod-worker-ids", "a,,b"}, fakeEnv({}));
  ASSERT_FALSE(empty.isOk());
  EXPECT_TRUE(mentions(empty.status(), "empty worker id")) << empty.status();
}

TEST(WorkerConfigTest, ALocalRankIsARankIndexInItsPod) {
  auto c = parseWorkerConfig({"ddp-worker", "--local-rank", "7"}, launcherEnv(fullEnv()));
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ(c->localRank, 7);
  for (const char* bad : {"-1", "x", "1024"}) {
    auto r = parseWorkerConfig({"ddp-worker", "--local-rank", bad}, launcherEnv(fullEnv()));
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_TRUE(mentions(r.status(), "DDP_LOCAL_RANK")) << r.status();
  }
}

TEST(WorkerConfigTest, FlagsOverrideTheEnvironment) {
  const std::string tokenFile = ::testing::TempDir() + "/worker_config_test_token_" + std::to_string(::getpid());
  {
    std::ofstream(tokenFile) << "tok-file\n";
  }
  auto c = parseWorkerConfig({"ddp-worker", "--controller", "http://ctl:1234", "--job=other", "--token-file",
                              tokenFile, "--worker-id", "other-w3", "--advertise-address", "h3", "--log-format",
                              "human", "--log-level=warning", "--checkpoint-dir", "/d2", "--comm-thread-priority",
                              "realtime", "--same-host-memory", "off"},
                             launcherEnv(fullEnv()));
  std::remove(tokenFile.c_str());
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ(c->controllerUrl, "http://ctl:1234");
  EXPECT_EQ(c->jobName, "other");
  EXPECT_EQ(c->jobToken, "tok-file");  // the file's content, trailing newline dropped
  EXPECT_EQ(c->workerId, "other-w3");
  EXPECT_EQ(c->advertiseAddress, "h3");
  EXPECT_EQ(c->logFormat, LogFormat::kHuman);
  EXPECT_EQ(c->logLevel, log::Level::kWarning);
  EXPECT_EQ(c->checkpointDirOverride, "/d2");
  EXPECT_EQ(c->commThreadPriority, CommThreadPriority::kRealtime);
  EXPECT_FALSE(c->sameHostMemory);
}

TEST(WorkerConfigTest, ErrorsNameTheVariableAndFlag) {
  struct Case {
    const char* variable;  // removed from the full environment
    const char* flag;
  };
  for (const Case& k : {Case{launch::kEnvControllerUrl, "--controller"}, Case{launch::kEnvJobName, "--job"},
                        Case{launch::kEnvJobToken, "--token-file"}, Case{launch::kEnvWorkerId, "--worker-id"}}) {
    launch::WorkerEnv we = fullEnv();
    const std::string v = k.variable;
    if (v == launch::kEnvControllerUrl) we.controllerUrl.clear();
    if (v == launch::kEnvJobName) we.jobName.clear();
    if (v == launch::kEnvJobToken) we.jobToken.clear();
    if (v == launch::kEnvWorkerId) we.workerId.clear();
    auto c = parseWorkerConfig({"w"}, launcherEnv(we));
    ASSERT_FALSE(c.isOk()) << v;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(mentions(c.status(), v)) << c.status();
    EXPECT_TRUE(mentions(c.status(), k.flag)) << c.status();
    EXPECT_TRUE(mentions(c.status(), "required")) << c.status();
  }
  const EnvLookup env = launcherEnv(fullEnv());
  auto badUrl = parseWorkerConfig({"w", "--controller", "ctl:80"}, env);
  EXPECT_TRUE(mentions(badUrl.status(), launch::kEnvControllerUrl)) << badUrl.status();
  EXPECT_TRUE(mentions(badUrl.status(), "http://HOST:PORT")) << badUrl.status();
  auto badPort = parseWorkerConfig({"w", "--controller", "http://ctl:99999"}, env);
  EXPECT_TRUE(mentions(badPort.status(), "out of range")) << badPort.status();
  auto withPath = parseWorkerConfig({"w", "--controller", "http://ctl:80/v1"}, env);
  EXPECT_TRUE(mentions(withPath.status(), "has a path")) << withPath.status();
  auto badFormat = parseWorkerConfig({"w", "--log-format", "xml"}, env);
  EXPECT_TRUE(mentions(badFormat.status(), launch::kEnvLogFormat)) << badFormat.status();
  auto badSameHost = parseWorkerConfig({"w", "--same-host-memory", "yes"}, env);
  EXPECT_TRUE(mentions(badSameHost.status(), launch::kEnvSameHostMemory)) << badSameHost.status();
  EXPECT_TRUE(mentions(badSameHost.status(), "'yes' is not on or off")) << badSameHost.status();
  auto badPriority = parseWorkerConfig({"w", "--comm-thread-priority", "high"}, env);
  EXPECT_TRUE(mentions(badPriority.status(), launch::kEnvCommThreadPriority)) << badPriority.status();
  EXPECT_TRUE(mentions(badPriority.status(), "high")) << badPriority.status();
  auto badLevel = parseWorkerConfig({"w"}, fakeEnv({{launch::kEnvControllerUrl, "http://a:1"},
                                                    {launch::kEnvJobName, "j"},
                                                    {launch::kEnvJobToken, "t"},
                                                    {launch::kEnvWorkerId, "w"},
                                                    {launch::kEnvLogLevel, "loud"}}));
  EXPECT_TRUE(mentions(badLevel.status(), launch::kEnvLogLevel)) << badLevel.status();
  auto noTokenFile = parseWorkerConfig({"w", "--token-file", "/nonexistent/token"}, env);
  EXPECT_TRUE(mentions(noTokenFile.status(), "--token-file: cannot read '/nonexistent/token'")) << noTokenFile.status();
}

TEST(WorkerConfigTest, OldRendezvousFlagsAreGone) {
  const EnvLookup env = launcherEnv(fullEnv());
  for (const char* flag : {"--store", "--rank", "--world-size", "--generation"}) {
    auto c = parseWorkerConfig({"w", flag, "1"}, env);
    EXPECT_TRUE(mentions(c.status(), std::string("unknown argument '") + flag + "'")) << c.status();
  }
  auto help = parseWorkerConfig({"w", "--help"}, env);
  EXPECT_EQ(help.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(mentions(help.status(), "usage: ddp-worker"));
  EXPECT_TRUE(mentions(help.status(), launch::kEnvControllerUrl));
}

TEST(WorkerConfigTest, ParsesHostPortAndControllerUrls) {
  std::string host;
  int port = 0;
  EXPECT_TRUE(parseHostPort("[::1]:8080", "x", &host, &port).isOk());
  EXPECT_EQ(host, "::1");
  EXPECT_FALSE(parseHostPort("h:70000", "x", &host, &port).isOk());
  ASSERT_TRUE(parseControllerUrl("http://ctl.local:8080/", "x", &host, &port).isOk());
  EXPECT_EQ(host, "ctl.local");
  EXPECT_EQ(port, 8080);
  EXPECT_FALSE(parseControllerUrl("https://ctl:443", "x", &host, &port).isOk());
}

}  // namespace
}  // namespace ddp::runtime
