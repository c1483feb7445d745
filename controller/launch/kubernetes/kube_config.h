#pragma once
// KubeConfig: where the Kubernetes API server is and how to authenticate to it, from the
// in-cluster environment (a pod's service account), and TokenSource, the bearer token re-read as
// the kubelet rotates it.
//
// In a pod: the API server at https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT_HTTPS
// (or _PORT); the service-account token, the cluster CA (ca.crt) and the namespace under
// /var/run/secrets/kubernetes.io/serviceaccount/. Projected tokens expire and are rotated by the
// kubelet, so the token is read from its file again every kTokenRefresh (and at once after the
// server answered 401: TokenSource::invalidate). The server's certificate is always verified
// against ca.crt: in-cluster configuration has no way to turn verification off.
// Thread model: inClusterConfig() is a pure function of its inputs (and the files it reads);
// TokenSource is thread-safe.

#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::controller::kube {

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
// How long a token read from its file is used before the file is read again.
inline constexpr Duration kTokenRefresh = std::chrono::seconds(60);
// Default deadline of one API request (a watch has its own).
inline constexpr Duration kDefaultRequestTimeout = std::chrono::seconds(10);

struct KubeConfig {
  std::string server;     // "https://10.96.0.1:443"; "http://..." only for a test's fake server
  std::string caFile;     // the CA that signed the server's certificate (https: required)
  std::string tokenFile;  // bearer token, re-read as it rotates; "" sends none (tests)
  std::string nameSpace;  // the namespace the controller runs in
  Duration requestTimeout = kDefaultRequestTimeout;

  // InvalidArgument naming the field: no server, a scheme other than http/https, https
  // without a CA file.
  Status validate() const;
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The configuration of a pod's service account. FailedPrecondition naming what is missing when
// not running in a pod (no KUBERNETES_SERVICE_HOST, no token or CA file).
Result<KubeConfig> inClusterConfig(const EnvLookup& env,
                                   const std::string& serviceAccountDir = kServiceAccountDir);

// The bearer token of a KubeConfig, read from its file when first asked, after kTokenRefresh,
// and after invalidate().
class TokenSource {
 public:
  explicit TokenSource(std::string file, const Clock& clock = SystemClock::instance(),
                       Duration refresh = kTokenRefresh);
  // The current token; "" when there is no token file. Unavailable when the file cannot be read
  // or is empty (the last good token is not reused past its refresh time).
  Result<std::string> token();
  // The server refused the token (401): read the file again on the next call.
  void invalidate();

 private:
  const std::string file_;
  const Clock& clock_;
  const Duration refresh_;
  std::mutex mu_;
  std::string token_;                  // guarded by mu_
  std::optional<TimePoint> readAt_;    // guarded by mu_
};

}  // namespace ddp::controller::kube
