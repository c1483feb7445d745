#pragma once
// The fixture the Kubernetes tests share: a started FakeKubeApiServer (fake_kube_api_server.h:
// FAKED, the API server) and a KubeClient talking to it; and a bounded wait for a condition.
// Thread model: one test's thread.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "controller/launch/kubernetes/kube_client.h"
#include "tests/unit/controller/kubernetes/fake_kube_api_server.h"

namespace ddp::controller::kube::testing {

// Polls `cond` every 10 ms until it holds or `limit` passed; returns its last value.
inline bool waitUntil(const std::function<bool()>& cond, Duration limit = std::chrono::seconds(5)) {
  for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

class FakeApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api_.start().isOk());
    client_ = newClient();
    ASSERT_NE(client_, nullptr);
  }

  // A client of the fake; `tokenFile` "" sends no token.
  std::unique_ptr<KubeClient> newClient(const Clock& clock = SystemClock::instance(), const std::string& tokenFile = "") {
    KubeConfig c;
    c.server = api_.url();
    c.tokenFile = tokenFile;
    auto client = KubeClient::create(c, clock);
    EXPECT_TRUE(client.isOk()) << client.status();
    return client.isOk() ? std::move(*client) : nullptr;
  }

  FakeKubeApiServer api_;
  std::unique_ptr<KubeClient> client_;
};

}  // namespace ddp::controller::kube::testing
