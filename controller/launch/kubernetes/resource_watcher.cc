#include "controller/launch/kubernetes/resource_watcher.h"

#include <algorithm>

#include "common/log.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

std::string keyOf(const json& o) {
  const json& m = o.value("metadata", json::object());
  return m.value("namespace", "") + "/" + m.value("name", "");
}

std::string versionOf(const json& o) { return o.value("metadata", json::object()).value("resourceVersion", ""); }

std::string urlEncode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

ResourceWatcher::ResourceWatcher(KubeClient& client, ResourceWatcherOptions options, Callback callback)
    : client_(client), options_(std::move(options)), callback_(std::move(callback)) {}

ResourceWatcher::~ResourceWatcher() { stop(); }

void ResourceWatcher::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void ResourceWatcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  cancel_.cancel();
  if (thread_.joinable()) thread_.join();
}

bool ResourceWatcher::synced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_;
}
std::string ResourceWatcher::resourceVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}
int ResourceWatcher::lists() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lists_;
}
Status ResourceWatcher::lastError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lastError_;
}

std::string ResourceWatcher::query(bool watch) const {
  std::string q = options_.collectionPath + "?";
  if (!options_.labelSelector.empty()) q += "labelSelector=" + urlEncode(options_.labelSelector) + "&";
  if (!watch) return q.substr(0, q.size() - 1);
  std::lock_guard<std::mutex> lock(mu_);
  return q + "watch=1&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(options_.watchTimeoutSeconds) +
         "&resourceVersion=" + urlEncode(rv_);
}

void ResourceWatcher::deliver(WatchEvent::Type type, const json& object) {
  const std::string key = keyOf(object);
  if (type == WatchEvent::Type::kDeleted) known_.erase(key); else known_[key] = versionOf(object);
  callback_(WatchEvent{type, object});
}

// Lists and reports the difference to what was known.
Status ResourceWatcher::list() {
  DDP_ASSIGN_OR_RETURN(json l, client_.get(query(false)));
  std::map<std::string, json> now;
  for (const json& item : l.value("items", json::array())) now[keyOf(item)] = item;
  std::vector<json> gone;
  for (const auto& [key, version] : known_) {
    if (!now.count(key)) {
      const size_t slash = key.find('/');
      gone.push_back({{"metadata", {{"namespace", key.substr(0, slash)}, {"name", key.substr(slash + 1)},
                                    {"resourceVersion", version}}}});
    }
  }
  for (const json& g : gone) deliver(WatchEvent::Type::kDeleted, g);
  for (const auto& [key, item] : now) {
    auto it = known_.find(key);
    if (it == known_.end()) deliver(WatchEvent::Type::kAdded, item);
    else if (it->second != versionOf(item)) deliver(WatchEvent::Type::kModified, item);
  }
  std::lock_guard<std::mutex> lock(mu_);
  rv_ = l.value("metadata", json::object()).value("resourceVersion", "");
  synced_ = true;
  ++lists_;
  return Status::ok();
}

Status ResourceWatcher::watchOnce(bool* gone) {
  *gone = false;
  Status parseError;
  Status st = client_.watch(
      query(true),
      [&](const std::string& line) {
        json e = json::parse(line, nullptr, false);
        if (!e.is_object() || !e.contains("type")) {
          parseError = internalError("watch: an event is not JSON: " + line.substr(0, 200));
          return false;
        }
        const std::string type = e["type"];
        const json& obj = e.value("object", json::object());
        if (type == "ERROR") {
          if (obj.value("code", 0) == 410) *gone = true;
          else parseError = unavailable("watch: " + obj.value("message", std::string("error event")));
          return false;
        }
        if (const std::string v = versionOf(obj); !v.empty()) {
          std::lock_guard<std::mutex> lock(mu_);
          rv_ = v;
        }
        if (type == "BOOKMARK") return true;
        if (type == "ADDED") deliver(WatchEvent::Type::kAdded, obj);
        else if (type == "MODIFIED") deliver(WatchEvent::Type::kModified, obj);
        else if (type == "DELETED") deliver(WatchEvent::Type::kDeleted, obj);
        return true;
      },
      Deadline::after(std::chrono::seconds(options_.watchTimeoutSeconds + 30)), &cancel_);
  if (st.code() == StatusCode::kOutOfRange) {  // HTTP 410
    *gone = true;
    return Status::ok();
  }
  if (!st.isOk()) return st;
  return parseError;
}

bool ResourceWatcher::sleepBackoff(Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [&] { return stopping_; });
  return !stopping_;
}

void ResourceWatcher::run() {
  bool needList = true;
  Duration backoff = options_.minBackoff;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    Status st;
    if (needList) {
      st = list();
      needList = !st.isOk();
    } else {
      bool gone = false;
      st = watchOnce(&gone);
      if (gone) {
        DDP_LOG(Info) << "kubernetes: " << options_.collectionPath << ": resourceVersion expired (410), listing again";
        needList = true;
        continue;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      lastError_ = st;
    }
    if (st.isOk()) {
      backoff = options_.minBackoff;
      continue;
    }
    DDP_LOG(Warning) << "kubernetes: " << options_.collectionPath << ": " << st.message() << "; retrying in "
                     << formatDuration(backoff);
    if (!sleepBackoff(backoff)) return;
    backoff = std::min(backoff * 2, options_.maxBackoff);
  }
}

}  // namespace ddp::controller::kube
