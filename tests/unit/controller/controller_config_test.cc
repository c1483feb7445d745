// ControllerConfig: flags, DDP_CONTROLLER_* fallbacks (an injected environment), validation
// messages that name the flag and the variable; and the layering rule that ddp-controller links
// no Gloo, NCCL, CUDA or BLAS (checked on the built binary's dynamic dependencies).
#include "controller/service/controller_config.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <map>

namespace ddp::controller {
namespace {

ConfigEnv envOf(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ControllerConfigTest, FlagsOverrideTheEnvironment) {
  auto c = parseControllerConfig({"--listen", "0.0.0.0:0", "--state-dir=/tmp/x"},
                                 envOf({{"DDP_CONTROLLER_LISTEN", "127.0.0.1:9"}, {"DDP_CONTROLLER_HANDLER_THREADS", "8"}}));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->listenHost, "0.0.0.0");
  EXPECT_EQ(c->listenPort, 0);
  EXPECT_EQ(c->stateDir, "/tmp/x");
  EXPECT_EQ(c->handlerThreads, 8);
  EXPECT_EQ(c->launcher, "local");
  auto v6 = parseControllerConfig({"--listen", "[::1]:8080", "--state-dir", "/s", "--launcher", "external"}, envOf({}));
  ASSERT_TRUE(v6.isOk());
  EXPECT_EQ(v6->listenHost, "::1");
  EXPECT_EQ(v6->launcher, "external");
}

TEST(ControllerConfigTest, ErrorsNameTheFlagAndTheVariable) {
  auto missing = parseControllerConfig({}, envOf({}));
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("--state-dir / DDP_CONTROLLER_STATE_DIR"), std::string::npos);
  auto port = parseControllerConfig({"--state-dir", "/s"}, envOf({{"DDP_CONTROLLER_LISTEN", "h:70000"}}));
  ASSERT_FALSE(port.isOk());
  EXPECT_NE(port.status().message().find("DDP_CONTROLLER_LISTEN"), std::string::npos) << port.status();
  auto launcher = parseControllerConfig({"--state-dir", "/s", "--launcher", "k8s"}, envOf({}));
  ASSERT_FALSE(launcher.isOk());
  EXPECT_NE(launcher.status().message().find("'k8s' is not local, external or kubernetes"), std::string::npos);
  auto unknown = parseControllerConfig({"--bogus"}, envOf({}));
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("unknown argument '--bogus'"), std::string::npos);
  auto help = parseControllerConfig({"--help"}, envOf({}));
  EXPECT_EQ(help.status().code(), StatusCode::kNotFound);
  EXPECT_NE(help.status().message().find("usage: ddp-controller"), std::string::npos);
}

// --gang-scheduler-name: the worker pods' schedulerName (Note [Gang scheduler PodGroups]).
TEST(ControllerConfigTest, GangSchedulerNameIsASchedulersName) {
  auto none = parseControllerConfig({"--state-dir", "/s"}, envOf({}));
  ASSERT_TRUE(none.isOk());
  EXPECT_EQ(none->gangSchedulerName, "");
  auto volcano = parseControllerConfig({"--state-dir", "/s"}, envOf({{"DDP_CONTROLLER_GANG_SCHEDULER_NAME", "volcano"}}));
  ASSERT_TRUE(volcano.isOk()) << volcano.status();
  EXPECT_EQ(volcano->gangSchedulerName, "volcano");
  auto bad = parseControllerConfig({"--state-dir", "/s", "--gang-scheduler-name", "Volcano Scheduler"}, envOf({}));
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("--gang-scheduler-name / DDP_CONTROLLER_GANG_SCHEDULER_NAME"), std::string::npos)
      << bad.status();
}

// --allow-worker-command (Note [Worker commands]): off by default; absolute paths, colon-separated.
TEST(ControllerConfigTest, AllowWorkerCommandListsAbsolutePaths) {
  auto none = parseControllerConfig({"--state-dir", "/s"}, envOf({}));
  ASSERT_TRUE(none.isOk()) << none.status();
  EXPECT_TRUE(none->allowedWorkerCommands.empty());
  EXPECT_FALSE(none->allowAnyWorkerCommand);
  auto two = parseControllerConfig({"--state-dir", "/s", "--allow-worker-command", "/opt/trainers:/usr/local/bin/t"},
                                   envOf({}));
  ASSERT_TRUE(two.isOk()) << two.status();
  EXPECT_EQ(two->allowedWorkerCommands, (std::vector<std::string>{"/opt/trainers", "/usr/local/bin/t"}));
  auto fromEnv = parseControllerConfig({"--state-dir", "/s"}, envOf({{"DDP_CONTROLLER_ALLOW_WORKER_COMMAND", "/opt/t"}}));
  ASSERT_TRUE(fromEnv.isOk()) << fromEnv.status();
  EXPECT_EQ(fromEnv->allowedWorkerCommands, std::vector<std::string>{"/opt/t"});
  auto relative = parseControllerConfig({"--state-dir", "/s", "--allow-worker-command", "bin/t"}, envOf({}));
  ASSERT_FALSE(relative.isOk());
  EXPECT_NE(relative.status().message().find("--allow-worker-command / DDP_CONTROLLER_ALLOW_WORKER_COMMAND: 'bin/t' is not an absolute path"),
            std::string::npos)
      << relative.status();
}

TEST(ControllerConfigTest, MetricsOpenIsASwitchAndRetentionIsSeconds) {
  auto closed = parseControllerConfig({"--state-dir", "/s"}, envOf({}));
  ASSERT_TRUE(closed.isOk());
  EXPECT_FALSE(closed->metricsOpen);
  EXPECT_EQ(closed->metricsRetention, std::chrono::minutes(15));
  auto open = parseControllerConfig({"--metrics-open", "--state-dir", "/s", "--metrics-retention", "60"}, envOf({}));
  ASSERT_TRUE(open.isOk()) << open.status();
  EXPECT_TRUE(open->metricsOpen);
  EXPECT_EQ(open->metricsRetention, std::chrono::seconds(60));
  auto env = parseControllerConfig({"--state-dir", "/s"}, envOf({{"DDP_CONTROLLER_METRICS_OPEN", "1"}}));
  ASSERT_TRUE(env.isOk());
  EXPECT_TRUE(env->metricsOpen);
  auto bad = parseControllerConfig({"--state-dir", "/s", "--metrics-open=maybe"}, envOf({}));
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("--metrics-open / DDP_CONTROLLER_METRICS_OPEN: 'maybe'"), std::string::npos)
      << bad.status();
  auto negative = parseControllerConfig({"--state-dir", "/s", "--metrics-retention", "-1"}, envOf({}));
  ASSERT_FALSE(negative.isOk());
  EXPECT_NE(negative.status().message().find("--metrics-retention"), std::string::npos) << negative.status();
}

// --watch-namespace lists namespaces (the first takes the REST API's jobs);
// --watch-all-namespaces is a switch.
TEST(ControllerConfigTest, WatchedNamespacesAreAListOrAll) {
  auto one = parseControllerConfig({"--state-dir", "/s", "--watch-namespace", "ml"}, envOf({}));
  ASSERT_TRUE(one.isOk()) << one.status();
  EXPECT_EQ(one->watchNamespace, "ml");
  EXPECT_EQ(one->watchNamespaces, std::vector<std::string>({"ml"}));
  EXPECT_FALSE(one->watchAllNamespaces);
  auto list = parseControllerConfig({"--state-dir", "/s", "--watch-namespace=ml,team-a,7b", "--watch-all-namespaces"},
                                    envOf({}));
  ASSERT_TRUE(list.isOk()) << list.status();
  EXPECT_EQ(list->watchNamespace, "ml");
  EXPECT_EQ(list->watchNamespaces, std::vector<std::string>({"ml", "team-a", "7b"}));
  EXPECT_TRUE(list->watchAllNamespaces);
  auto env = parseControllerConfig({"--state-dir", "/s"}, envOf({{"DDP_CONTROLLER_WATCH_ALL_NAMESPACES", "true"}}));
  ASSERT_TRUE(env.isOk()) << env.status();
  EXPECT_TRUE(env->watchAllNamespaces);
  for (const char* bad : {"ml,,x", "ml,Team", "ml,ml", "-ml"}) {
    auto r = parseControllerConfig({"--state-dir", "/s", "--watch-namespace", bad}, envOf({}));
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_NE(r.status().message().find("--watch-namespace / DDP_CONTROLLER_WATCH_NAMESPACE: '"), std::string::npos)
        << r.status();
  }
}

// --token-secret: the token in a Secret (Note [Token Secret]), only on Kubernetes, not beside
// --token-file.
TEST(ControllerConfigTest, TokenSecretIsForKubernetesAndAloneOfItsKind) {
  const std::vector<std::string> kube = {"--state-dir", "/s", "--launcher", "kubernetes", "--worker-image", "i"};
  auto args = [&](std::vector<std::string> more) {
    more.insert(more.begin(), kube.begin(), kube.end());
    return more;
  };
  auto ok = parseControllerConfig(args({"--token-secret", "ddp-api-token"}), envOf({}));
  ASSERT_TRUE(ok.isOk()) << ok.status();
  EXPECT_EQ(ok->tokenSecret, "ddp-api-token");
  auto local = parseControllerConfig({"--state-dir", "/s", "--token-secret", "t"}, envOf({}));
  ASSERT_FALSE(local.isOk());
  EXPECT_NE(local.status().message().find("only with --launcher kubernetes"), std::string::npos) << local.status();
  auto both = parseControllerConfig(args({"--token-secret", "t", "--token-file", "/f"}), envOf({}));
  ASSERT_FALSE(both.isOk());
  EXPECT_NE(both.status().message().find("not with --token-file"), std::string::npos) << both.status();
}

TEST(ControllerConfigTest, TheWorkerListenerAndThePerClientCap) {
  auto d = parseControllerConfig({"--state-dir", "/s"}, envOf({}));
  ASSERT_TRUE(d.isOk()) << d.status();
  EXPECT_EQ(d->workerListenHost, "");  // the --listen host
  EXPECT_EQ(d->workerListenPort, 0);   // recorded in the state dir, else any
  EXPECT_EQ(d->maxConnectionsPerClient, 1024u);
  auto c = parseControllerConfig({"--state-dir", "/s", "--listen", "0.0.0.0:8080", "--worker-listen", "[::]:8081",
                                  "--max-connections-per-client", "0"},
                                 envOf({}));
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ(c->workerListenHost, "::");
  EXPECT_EQ(c->workerListenPort, 8081);
  EXPECT_EQ(c->maxConnectionsPerClient, 0u);
  auto env = parseControllerConfig({"--state-dir", "/s"}, envOf({{"DDP_CONTROLLER_WORKER_LISTEN", "10.0.0.1:9000"}}));
  ASSERT_TRUE(env.isOk()) << env.status();
  EXPECT_EQ(env->workerListenPort, 9000);
  auto same = parseControllerConfig({"--state-dir", "/s", "--listen", "0.0.0.0:8080", "--worker-listen", "0.0.0.0:8080"},
                                    envOf({}));
  ASSERT_FALSE(same.isOk());
  EXPECT_NE(same.status().message().find("--worker-listen / DDP_CONTROLLER_WORKER_LISTEN: the workers need a port of their own"),
            std::string::npos) << same.status();
  auto bad = parseControllerConfig({"--state-dir", "/s", "--worker-listen", "nohost"}, envOf({}));
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("is not HOST:PORT"), std::string::npos) << bad.status();
}

TEST(ControllerLayeringTest, TheControllerLinksNoGlooNcclCudaOrBlas) {
  const std::string cmd = std::string("ldd ") + DDP_TEST_BIN_DIR + "/ddp-controller 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  ASSERT_EQ(::pclose(p), 0) << out;
  ASSERT_NE(out.find("libsqlite3"), std::string::npos) << "ldd did not list the binary's libraries:\n" << out;
  for (const char* lib : {"libgloo", "libnccl", "libcudart", "libcublas", "libopenblas", "libblas"}) {
    EXPECT_EQ(out.find(lib), std::string::npos) << "ddp-controller links " << lib << ":\n" << out;
  }
}

}  // namespace
}  // namespace ddp::controller
