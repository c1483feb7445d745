#pragma once
// ResourceWatcher: an up-to-date view of one collection of the Kubernetes API (DDPJobs, or a
// job's pods), reported as events, in the manner of client-go's reflector: list, then watch from
// the list's resourceVersion with bookmarks; a watch that ends (timeoutSeconds, a dropped
// connection) resumes from the last resourceVersion seen (an event's or a bookmark's); 410 Gone
// (an HTTP 410, or an ERROR event with code 410: the version was compacted away) lists again and
// reports the difference to what was known (ADDED / MODIFIED / DELETED), so nothing is missed
// or reported twice; errors retry with exponential backoff (kMinBackoff doubling to kMaxBackoff).
// Thread model: start() starts one thread that runs the loop and calls the callback (one call
// at a time, in the order of events); stop() (and the destructor) cancels the watch and joins
// it. Accessors are thread-safe.

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "controller/launch/kubernetes/kube_client.h"

namespace ddp::controller::kube {

inline constexpr Duration kMinBackoff = std::chrono::milliseconds(200);
inline constexpr Duration kMaxBackoff = std::chrono::seconds(10);

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted };
  Type type = Type::kAdded;
  nlohmann::json object;
};

struct ResourceWatcherOptions {
  std::string collectionPath;   // "/apis/ddp.dev/v1/namespaces/ns/ddpjobs" or ".../ddpjobs" (all)
  std::string labelSelector;    // "" for all; e.g. "ddp.dev/job=fmnist"
  int watchTimeoutSeconds = 300;  // the server ends each watch after this; it then resumes
  Duration minBackoff = kMinBackoff;
  Duration maxBackoff = kMaxBackoff;
};

class ResourceWatcher {
 public:
  using Callback = std::function<void(const WatchEvent&)>;
  ResourceWatcher(KubeClient& client, ResourceWatcherOptions options, Callback callback);
  ~ResourceWatcher();
  ResourceWatcher(const ResourceWatcher&) = delete;
  ResourceWatcher& operator=(const ResourceWatcher&) = delete;

  void start();
  void stop();

  bool synced() const;                 // the first list was reported
  std::string resourceVersion() const; // the last version seen
  int lists() const;                   // how many times it listed (1 + re-lists after 410)
  Status lastError() const;            // the last failure (ok when the last call worked)

 private:
  void run();
  Status list();
  Status watchOnce(bool* gone);
  void deliver(WatchEvent::Type type, const nlohmann::json& object);
  bool sleepBackoff(Duration d);  // false when stopping
  std::string query(bool watch) const;

  KubeClient& client_;
  const ResourceWatcherOptions options_;
  const Callback callback_;
  WatchCancel cancel_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                     // guarded by mu_
  bool synced_ = false;                       // guarded by mu_
  std::string rv_;                            // guarded by mu_
  int lists_ = 0;                             // guarded by mu_
  Status lastError_;                          // guarded by mu_
  std::map<std::string, std::string> known_;  // "ns/name" -> resourceVersion; loop thread only
};

}  // namespace ddp::controller::kube
