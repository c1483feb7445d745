// KubeClient against FakeKubeApiServer (FAKED: the Kubernetes API server; it speaks the real
// REST paths, codes and watch streams, fake_kube_api_server.h), and the in-cluster
// configuration from a service-account directory written by the test.
#include "controller/launch/kubernetes/kube_client.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "controller/launch/kubernetes/kube_config.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

class KubernetesClientTest : public testing::FakeApiTest {
 protected:
  static json pod(const std::string& name) {
    return {{"apiVersion", "v1"}, {"kind", "Pod"},
            {"metadata", {{"name", name}, {"labels", {{"ddp.dev/job", "j1"}}}}},
            {"spec", {{"restartPolicy", "Never"}, {"containers", json::array({{{"name", "worker"}, {"image", "ddp"}}})}}}};
  }

};

const std::string kPods = "/api/v1/namespaces/team-a/pods";
const std::string kJobs = "/apis/ddp.dev/v1/namespaces/team-a/ddpjobs";

TEST_F(KubernetesClientTest, CreateGetReplaceDeleteWithTheApiServersCodes) {
  auto created = client_->create(kPods, pod("j1-worker-0"));
  ASSERT_TRUE(created.isOk()) << created.status();
  EXPECT_EQ((*created)["metadata"]["namespace"], "team-a");
  const std::string rv = (*created)["metadata"]["resourceVersion"];
  EXPECT_FALSE(rv.empty());

  auto again = client_->create(kPods, pod("j1-worker-0"));
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists) << again.status();
  EXPECT_NE(again.status().message().find("HTTP 409"), std::string::npos) << again.status();

  auto bad = client_->create(kPods, pod("Not_A_Name"));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("HTTP 422"), std::string::npos) << bad.status();

  auto got = client_->get(kPods + "/j1-worker-0");
  ASSERT_TRUE(got.isOk());
  json changed = *got;
  changed["metadata"]["labels"]["extra"] = "1";
  auto replaced = client_->replace(kPods + "/j1-worker-0", changed);
  ASSERT_TRUE(replaced.isOk()) << replaced.status();
  EXPECT_NE((*replaced)["metadata"]["resourceVersion"], rv);
  // Writing the old copy again: its resourceVersion is stale now.
  auto stale = client_->replace(kPods + "/j1-worker-0", changed);
  EXPECT_EQ(stale.status().code(), StatusCode::kAborted) << stale.status();
  EXPECT_NE(stale.status().message().find("HTTP 409"), std::string::npos);

  auto list = client_->get(kPods + "?labelSelector=ddp.dev%2Fjob%3Dj1");
  ASSERT_TRUE(list.isOk()) << list.status();
  EXPECT_EQ((*list)["items"].size(), 1u);
  EXPECT_FALSE((*list)["metadata"]["resourceVersion"].get<std::string>().empty());

  EXPECT_TRUE(client_->remove(kPods + "/j1-worker-0").isOk());
  EXPECT_EQ(client_->get(kPods + "/j1-worker-0").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->remove(kPods + "/j1-worker-0").code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->get("/api/v1/namespaces/team-a/nothings/x").status().code(), StatusCode::kNotFound);
}

// The fake's name rules (fake_admission.h), as a real API server's: a Service name is a
// DNS-1035 label, a pod's hostname a DNS-1123 label, a label value at most 63 characters.
TEST_F(KubernetesClientTest, NamesOfTheWrongFormForTheirKindAre422) {
  const std::string services = "/api/v1/namespaces/team-a/services";
  auto digit = client_->create(services, {{"metadata", {{"name", "7up"}}}, {"spec", json::object()}});
  EXPECT_EQ(digit.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(digit.status().message().find("DNS-1035"), std::string::npos) << digit.status();
  EXPECT_TRUE(client_->create(services, {{"metadata", {{"name", "up7"}}}, {"spec", json::object()}}).isOk());
  EXPECT_TRUE(client_->create(kPods, pod("7up-worker-0")).isOk());  // a pod name may start with a digit
  json longHost = pod("j2-worker-0");
  longHost["spec"]["hostname"] = std::string(64, 'h');
  auto host = client_->create(kPods, longHost);
  EXPECT_EQ(host.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(host.status().message().find("spec.hostname"), std::string::npos) << host.status();
  json longLabel = pod("j3-worker-0");
  longLabel["metadata"]["labels"]["ddp.dev/job"] = std::string(64, 'j');
  auto label = client_->create(kPods, longLabel);
  EXPECT_EQ(label.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(label.status().message().find("metadata.labels"), std::string::npos) << label.status();
}

TEST_F(KubernetesClientTest, StatusSubresourceTakesMergePatchOnly) {
  json job = {{"apiVersion", "ddp.dev/v1"}, {"kind", "DDPJob"}, {"metadata", {{"name", "j1"}}},
              {"spec", {{"epochs", 1}}}, {"status", {{"phase", "Succeeded"}}}};
  auto created = client_->create(kJobs, job);
  ASSERT_TRUE(created.isOk()) << created.status();
  EXPECT_FALSE(created->contains("status"));  // create ignores status
  EXPECT_EQ((*created)["metadata"]["generation"], 1);

  auto patched = client_->mergePatch(kJobs + "/j1/status", {{"status", {{"phase", "Running"}, {"readyWorkers", 2}}}});
  ASSERT_TRUE(patched.isOk()) << patched.status();
  EXPECT_EQ((*patched)["status"]["phase"], "Running");
  EXPECT_EQ((*patched)["metadata"]["generation"], 1);  // status is not the spec
  // A merge patch leaves the fields it does not name.
  patched = client_->mergePatch(kJobs + "/j1/status", {{"status", {{"restarts", 1}}}});
  ASSERT_TRUE(patched.isOk());
  EXPECT_EQ((*patched)["status"]["readyWorkers"], 2);
  EXPECT_EQ((*patched)["status"]["restarts"], 1);
  // The object's own endpoint does not change status, and a spec change bumps the generation.
  auto spec = client_->mergePatch(kJobs + "/j1", {{"spec", {{"epochs", 2}}}, {"status", {{"phase", "Failed"}}}});
  ASSERT_TRUE(spec.isOk());
  EXPECT_EQ((*spec)["status"]["phase"], "Running");
  EXPECT_EQ((*spec)["metadata"]["generation"], 2);
  // Strategic merge is refused for custom resources (415).
  auto r = client_->request("PATCH", kJobs + "/j1/status", R"({"status":{"phase":"x"}})",
                            "application/strategic-merge-patch+json");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->status, 415);
  EXPECT_EQ(apiStatus(*r, "patch").code(), StatusCode::kInvalidArgument);
}

TEST_F(KubernetesClientTest, WatchStreamsEventsAndBookmarksFromAResourceVersion) {
  const std::string from = std::to_string(api_.resourceVersion());
  std::vector<json> events;
  std::thread watcher([&] {
    Status st = client_->watch(kPods + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=2&resourceVersion=" + from,
                               [&](const std::string& line) {
                                 events.push_back(json::parse(line));
                                 return events.size() < 5;
                               },
                               Deadline::after(std::chrono::seconds(10)));
    EXPECT_TRUE(st.isOk()) << st;
  });
  // The watch is registered once the stream started; creating first would also be replayed.
  ASSERT_TRUE(client_->create(kPods, pod("p0")).isOk());
  ASSERT_TRUE(client_->mergePatch(kPods + "/p0", {{"metadata", {{"labels", {{"x", "y"}}}}}}).isOk());
  ASSERT_TRUE(client_->remove(kPods + "/p0").isOk());
  for (int i = 0; i < 100 && events.size() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  api_.sendBookmarks();
  ASSERT_TRUE(client_->create(kPods, pod("p1")).isOk());
  watcher.join();
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[1]["type"], "MODIFIED");
  EXPECT_EQ(events[2]["type"], "DELETED");
  EXPECT_EQ(events[3]["type"], "BOOKMARK");
  EXPECT_EQ(events[3]["object"]["metadata"]["resourceVersion"], events[2]["object"]["metadata"]["resourceVersion"]);
  EXPECT_EQ(events[4]["object"]["metadata"]["name"], "p1");
}

TEST_F(KubernetesClientTest, WatchFromACompactedVersionGetsGone) {
  ASSERT_TRUE(client_->create(kPods, pod("p0")).isOk());
  const std::string old = std::to_string(api_.resourceVersion() - 1);
  api_.compact();
  std::vector<json> events;
  Status st = client_->watch(kPods + "?watch=1&resourceVersion=" + old,
                             [&](const std::string& line) { events.push_back(json::parse(line)); return true; },
                             Deadline::after(std::chrono::seconds(5)));
  EXPECT_TRUE(st.isOk()) << st;  // the stream carried the error and ended
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "ERROR");
  EXPECT_EQ(events[0]["object"]["code"], 410);
}

TEST_F(KubernetesClientTest, TheTokenIsReadAgainAfterA401AndAfterItsRefreshTime) {
  ddp::test::TempDir dir;
  const std::string file = dir.path() + "/token";
  writeFile(file, "old\n");
  FakeClock clock;
  auto client = newClient(clock, file);
  ASSERT_NE(client, nullptr);
  auto requestsFor = [&](auto call) {
    const size_t before = api_.requests().size();
    call();
    return api_.requests().size() - before;
  };
  api_.requireToken("old");
  EXPECT_EQ(requestsFor([&] { EXPECT_TRUE(client->get(kPods).isOk()); }), 1u);
  // Rotated by the kubelet: the cached token gets 401, the file is read again, one retry.
  api_.requireToken("new");
  writeFile(file, "new\n");
  EXPECT_EQ(requestsFor([&] { EXPECT_TRUE(client->get(kPods).isOk()); }), 2u);
  // Rotation without a 401 first: the file is read again once kTokenRefresh passed.
  writeFile(file, "newer\n");
  api_.requireToken("newer");
  clock.advance(kTokenRefresh + std::chrono::seconds(1));
  EXPECT_EQ(requestsFor([&] { EXPECT_TRUE(client->get(kPods).isOk()); }), 1u);
  // A token the server does not take: one retry, then the 401 as FailedPrecondition.
  api_.requireToken("other");
  EXPECT_EQ(requestsFor([&] {
              auto r = client->get(kPods);
              EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status();
              EXPECT_NE(r.status().message().find("HTTP 401"), std::string::npos);
            }),
            2u);
}

TEST(KubernetesConfigTest, InClusterConfigFromTheServiceAccountMount) {
  ddp::test::TempDir dir;
  writeFile(dir.path() + "/token", "t0k3n\n");
  writeFile(dir.path() + "/ca.crt", "-----BEGIN CERTIFICATE-----\n");
  writeFile(dir.path() + "/namespace", "ml-team\n");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"},
                                            {"KUBERNETES_SERVICE_PORT_HTTPS", "6443"}};
  auto lookup = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  auto c = inClusterConfig(lookup, dir.path());
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ(c->server, "https://10.96.0.1:6443");  // the HTTPS port wins
  EXPECT_EQ(c->caFile, dir.path() + "/ca.crt");
  EXPECT_EQ(c->tokenFile, dir.path() + "/token");
  EXPECT_EQ(c->nameSpace, "ml-team");
  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  EXPECT_EQ(inClusterConfig(lookup, dir.path())->server, "https://[fd00::1]:6443");
  std::filesystem::remove(dir.path() + "/ca.crt");
  auto noCa = inClusterConfig(lookup, dir.path());
  EXPECT_EQ(noCa.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(noCa.status().message().find("ca.crt"), std::string::npos);
  env.clear();
  auto outside = inClusterConfig(lookup, dir.path());
  EXPECT_EQ(outside.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(outside.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  // https always needs a CA: verification cannot be turned off.
  KubeConfig c2;
  c2.server = "https://10.0.0.1:443";
  EXPECT_EQ(KubeClient::create(c2).status().code(), StatusCode::kInvalidArgument);
  c2.server = "10.0.0.1:443";
  EXPECT_EQ(KubeClient::create(c2).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ddp::controller::kube
