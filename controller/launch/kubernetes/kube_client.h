#pragma once
// KubeClient: a small client of the Kubernetes REST API, enough for the launcher: get, list,
// create, replace (PUT with the resourceVersion the caller read), merge-patch (custom resources
// and their status subresource accept application/merge-patch+json, not strategic merge),
// delete, and watch streams (newline-delimited JSON events over a chunked response).
//
// Every call has a deadline (the config's requestTimeout unless given). HTTPS always verifies
// the server against the config's CA; the bearer token comes from TokenSource and is re-read
// after a 401. Answers the API server gives become a Status through apiStatus() (404 NotFound,
// 409 AlreadyExists on create and Aborted on a stale resourceVersion, 410 OutOfRange "gone",
// 400, 415 and 422 InvalidArgument, 401/403 FailedPrecondition, 5xx and transport errors Unavailable, a
// passed deadline Timeout), with the server's message.
// Thread model: thread-safe; each call opens its own connection (the launcher makes few calls;
// a watch holds its connection for the stream's lifetime).

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/status.h"
#include "controller/launch/kubernetes/kube_config.h"

namespace ddp::controller::kube {

// Cancels a running watch from another thread: cancel() closes its connection, and a watch
// started after cancel() returns at once. Thread-safe.
class WatchCancel {
 public:
  void cancel();
  bool cancelled() const;

 private:
  friend class KubeClient;
  // Registers how to abort the current connection; false when already cancelled.
  bool attach(std::function<void()> abort);
  void detach();
  mutable std::mutex mu_;
  bool cancelled_ = false;         // guarded by mu_
  std::function<void()> abort_;    // guarded by mu_
};

struct KubeResponse {
  int status = 0;
  std::string body;
};

// The Status of an API answer (ok for 2xx); `what` names the call ("create pods/x").
Status apiStatus(const KubeResponse& response, const std::string& what);

class KubeClient {
 public:
  // InvalidArgument when the config does not validate.
  static Result<std::unique_ptr<KubeClient>> create(KubeConfig config, const Clock& clock = SystemClock::instance());

  const KubeConfig& config() const { return config_; }

  // One request; the response whatever its HTTP status. Unavailable / Timeout when no response.
  Result<KubeResponse> request(const std::string& method, const std::string& path, const std::string& body = "",
                               const std::string& contentType = "application/json",
                               std::optional<Deadline> deadline = std::nullopt);

  // The object at `path`, as JSON.
  Result<nlohmann::json> get(const std::string& path);
  // POST to a collection; the created object (201).
  Result<nlohmann::json> create(const std::string& collectionPath, const nlohmann::json& object);
  // PUT `object` (carrying the metadata.resourceVersion it was read at); Aborted on a conflict.
  Result<nlohmann::json> replace(const std::string& path, const nlohmann::json& object);
  // PATCH with application/merge-patch+json.
  Result<nlohmann::json> mergePatch(const std::string& path, const nlohmann::json& patch);
  // DELETE; NotFound when it is already gone. `propagation`: "Background" / "Foreground" / "".
  Status remove(const std::string& path, const std::string& propagation = "Background");

  // Streams `pathWithQuery` (a ...?watch=1&... URL): calls onLine with each complete line (one
  // JSON event) until the server ends the stream (ok), onLine returns false (ok), or the
  // deadline passes (Timeout), or `cancel` is cancelled (Aborted). An HTTP error answer is
  // returned through apiStatus (410 Gone: OutOfRange). Blocks until then.
  Status watch(const std::string& pathWithQuery, const std::function<bool(const std::string& line)>& onLine,
               Deadline deadline, WatchCancel* cancel = nullptr);

 private:
  KubeClient(KubeConfig config, const Clock& clock);
  Result<nlohmann::json> jsonCall(const std::string& method, const std::string& path, const std::string& body,
                                  const std::string& contentType, const std::string& what);

  const KubeConfig config_;
  const Clock& clock_;
  TokenSource tokens_;
};

}  // namespace ddp::controller::kube
