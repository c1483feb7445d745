// ResourceWatcher against FakeKubeApiServer (FAKED: the API server; real REST paths and chunked
// watch streams): list then watch, bookmarks, resume after a dropped watch without a re-list,
// re-list after 410 Gone reporting exactly what changed meanwhile, and a prompt stop.
#include "controller/launch/kubernetes/resource_watcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

const std::string kJobs = "ddp.dev/v1/ddpjobs";

json job(const std::string& name, int epochs = 1) {
  return {{"metadata", {{"name", name}}}, {"spec", {{"epochs", epochs}}}};
}

class KubernetesWatcherTest : public testing::FakeApiTest {
 protected:
  std::unique_ptr<ResourceWatcher> watcher(int timeoutSeconds = 30) {
    ResourceWatcherOptions o;
    o.collectionPath = "/apis/ddp.dev/v1/namespaces/ns/ddpjobs";
    o.watchTimeoutSeconds = timeoutSeconds;
    o.minBackoff = std::chrono::milliseconds(20);
    return std::make_unique<ResourceWatcher>(*client_, o, [this](const WatchEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      const char* t = e.type == WatchEvent::Type::kAdded ? "ADDED" : e.type == WatchEvent::Type::kModified ? "MODIFIED" : "DELETED";
      events_.push_back(std::string(t) + " " + e.object["metadata"]["name"].get<std::string>());
    });
  }

  // Waits (at most `limit`) until `n` events arrived; returns them.
  std::vector<std::string> waitFor(size_t n, Duration limit = std::chrono::seconds(5)) {
    for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (events_.size() >= n) return events_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

  // Waits until the watcher has an open watch (the fake saw a watch request after `since`).
  void waitForWatch(size_t since) {
    for (int i = 0; i < 500; ++i) {
      auto r = api_.requests();
      for (size_t k = since; k < r.size(); ++k) {
        if (r[k].find("watch=1") != std::string::npos) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "no watch request";
  }

  std::mutex mu_;
  std::vector<std::string> events_;
};

TEST_F(KubernetesWatcherTest, ListsThenWatchesAndFollowsBookmarks) {
  api_.put(kJobs, "ns", job("a"));
  api_.put(kJobs, "other", job("elsewhere"));  // another namespace: not seen
  auto w = watcher();
  w->start();
  EXPECT_EQ(waitFor(1), (std::vector<std::string>{"ADDED a"}));
  waitForWatch(0);
  api_.put(kJobs, "ns", job("b"));
  api_.put(kJobs, "ns", job("a", 2));
  EXPECT_EQ(waitFor(3), (std::vector<std::string>{"ADDED a", "ADDED b", "MODIFIED a"}));
  api_.put(kJobs, "other", job("elsewhere", 3));  // moves the version on without an event here
  api_.sendBookmarks();
  for (int i = 0; i < 200 && w->resourceVersion() != std::to_string(api_.resourceVersion()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(w->resourceVersion(), std::to_string(api_.resourceVersion()));
  EXPECT_EQ(w->lists(), 1);
  EXPECT_TRUE(w->synced());
  w->stop();
  EXPECT_EQ(waitFor(3).size(), 3u);
}

TEST_F(KubernetesWatcherTest, ResumesADroppedWatchFromTheLastVersionWithoutListing) {
  auto w = watcher();
  w->start();
  waitForWatch(0);
  api_.put(kJobs, "ns", job("a"));
  waitFor(1);
  const size_t before = api_.requests().size();
  api_.closeWatches();  // the connection drops (an API server restart)
  api_.put(kJobs, "ns", job("b"));  // while it is away
  waitForWatch(before);
  EXPECT_EQ(waitFor(2), (std::vector<std::string>{"ADDED a", "ADDED b"}));
  EXPECT_EQ(w->lists(), 1);
  const auto r = api_.requests();
  EXPECT_NE(r.back().find("resourceVersion="), std::string::npos) << r.back();
}

TEST_F(KubernetesWatcherTest, ExpiredVersionRelistsWithTheDifference) {
  api_.put(kJobs, "ns", job("keep"));
  api_.put(kJobs, "ns", job("change"));
  api_.put(kJobs, "ns", job("remove"));
  auto w = watcher();
  w->start();
  EXPECT_EQ(waitFor(3).size(), 3u);
  waitForWatch(0);
  // Changes the watcher cannot see as events: its stream drops, watches fail (503: it backs off
  // and retries) while the objects change and the history is compacted, so its resume gets 410
  // and it must list again.
  api_.setWatchesUnavailable(true);
  api_.closeWatches();
  api_.put(kJobs, "ns", job("change", 5));
  api_.put(kJobs, "ns", job("new"));
  {
    // Delete "remove" as another client would: through the API.
    auto st = client_->remove("/apis/ddp.dev/v1/namespaces/ns/ddpjobs/remove");
    ASSERT_TRUE(st.isOk()) << st;
  }
  api_.compact();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(w->lastError().code(), StatusCode::kUnavailable) << w->lastError();
  api_.setWatchesUnavailable(false);
  auto events = waitFor(6);
  ASSERT_EQ(events.size(), 6u);
  std::vector<std::string> after(events.begin() + 3, events.end());
  std::sort(after.begin(), after.end());
  EXPECT_EQ(after, (std::vector<std::string>{"ADDED new", "DELETED remove", "MODIFIED change"}));
  EXPECT_GE(w->lists(), 2);
  EXPECT_EQ(waitFor(7, std::chrono::milliseconds(300)).size(), 6u);  // nothing reported twice
}

TEST_F(KubernetesWatcherTest, StopCancelsALongWatchAtOnce) {
  auto w = watcher(600);
  w->start();
  waitForWatch(0);
  const auto t0 = std::chrono::steady_clock::now();
  w->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

}  // namespace
}  // namespace ddp::controller::kube
