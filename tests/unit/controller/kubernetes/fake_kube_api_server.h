#pragma once
// FakeKubeApiServer: an in-process stand-in for the Kubernetes API server, for the Kubernetes
// launcher's tests. FAKED: the API server itself (no kube-apiserver can run on the project's
// machines). It speaks the real protocol over HTTP on loopback (no TLS: the client's TLS is
// tested against a real TLS server in kube_client_tls_test.cc):
//  - paths /api/v1/namespaces/{ns}/{resource}[/{name}[/status|/log]] and
//    /apis/{group}/{version}/namespaces/{ns}/{resource}[/{name}[/status]], and the
//    all-namespaces collections /api/v1/{resource}, /apis/{group}/{version}/{resource};
//  - admission (fake_admission.h): 422 Invalid for a name or label value of the wrong form for
//    its kind (DNS-1035 Services, ...), 403 Forbidden for a pod its namespace's
//    `pod-security.kubernetes.io/enforce` level refuses (a Namespace stored with
//    put("namespaces", "", ...) carries the label);
//  - verbs and codes: POST 201 (409 AlreadyExists), GET 200/404,
//    list with labelSelector (equality terms) and a list resourceVersion, PUT 200 (409 Conflict
//    on a stale metadata.resourceVersion), PATCH with application/merge-patch+json (415 for
//    strategic merge on a custom resource), DELETE 200/404, 401 without the expected token;
//    errors as Kubernetes Status objects;
//  - the status subresource of ddpjobs: writes to the object leave status alone, writes to
//    /status change only status; metadata.generation counts spec changes;
//  - watch (?watch=1): newline-delimited JSON events in a chunked response, ADDED / MODIFIED /
//    DELETED from the given resourceVersion (synthetic ADDED for every object when it is absent
//    or "0"), BOOKMARK events when allowWatchBookmarks=true (sent by sendBookmarks()), an ERROR
//    event with a 410 Status ("too old resource version") for a version older than the retained
//    history (compact() drops it), and the end of the stream after timeoutSeconds;
//  - deletion propagates to objects whose ownerReferences name the deleted uid (the garbage
//    collector), at once (no graceful termination: a deleted pod is gone at once);
//  - with enforceRbac(), authorization: a request no rule allows, or a write setting
//    blockOwnerDeletion on an owner whose finalizers the client may not update, gets 403
//    Forbidden (fake_rbac.h);
//  - the PodGroup kinds of the gang schedulers (scheduling.x-k8s.io/v1alpha1 and
//    scheduling.volcano.sh/v1beta1 podgroups: stored, listed, watched, collected);
//  - Kueue's plain pod integration (FAKED: Kueue's webhook and its admission, on request):
//    enableKueueAdmission() gates each created pod labelled kueue.x-k8s.io/queue-name, and
//    admitKueueGroup() removes the gate as Kueue does once the group's workload is admitted.
// Thread model: start() and stop() from the test's thread; the handlers run on the server's
// threads; every other method is thread-safe.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/http/http_server.h"
#include "common/status.h"
#include "tests/unit/controller/kubernetes/fake_rbac.h"

namespace ddp::controller::kube::testing {

class FakeKubeApiServer {
 public:
  FakeKubeApiServer();
  ~FakeKubeApiServer();

  Status start();
  void stop();
  std::string url() const;  // "http://127.0.0.1:PORT"

  // Requests must carry "Authorization: Bearer <token>" (401 otherwise); "" accepts any.
  void requireToken(const std::string& token);
  // From now on, requests are authorized by `rbac` (403 Forbidden when it refuses; fake_rbac.h).
  // Calls of this class's own methods (put, object, ...) are not requests: they are not checked.
  void enforceRbac(FakeRbac rbac);
  // "METHOD path?query: message" of every request refused with 403 so far.
  std::vector<std::string> refusals() const;
  // The stored object, or nullopt. `resource` as in paths: "pods", "ddp.dev/v1/ddpjobs".
  std::optional<nlohmann::json> object(const std::string& resource, const std::string& ns,
                                       const std::string& name) const;
  std::vector<nlohmann::json> objects(const std::string& resource, const std::string& ns) const;
  // Creates or replaces an object as another client would (bumps its resourceVersion, notifies
  // watches). Returns the stored object.
  nlohmann::json put(const std::string& resource, const std::string& ns, nlohmann::json object);
  // Sends a BOOKMARK with the current resourceVersion to every watch that allows bookmarks.
  void sendBookmarks();
  // Forgets the event history: a watch from an older resourceVersion gets 410.
  void compact();
  // Ends every open watch stream (as an API server restart would).
  void closeWatches();
  // Before the next PUT or PATCH of this object, another client writes it (its
  // resourceVersion moves on): a PUT carrying the version read before gets 409.
  void interfereOnNextWrite(const std::string& resource, const std::string& ns, const std::string& name);
  // While on, new watch requests get 503 ServiceUnavailable (lists and writes still work).
  void setWatchesUnavailable(bool unavailable);
  // "METHOD path?query" of every request so far, in order.
  std::vector<std::string> requests() const;
  int64_t resourceVersion() const;
  // Replies to POSTs (creates) of `resource` wait `delay` after the object is stored (other
  // clients see it at once): widens the window between a create and its caller hearing of it.
  void delayCreateReplies(const std::string& resource, Duration delay);
  // Text served by GET .../pods/{name}/log. With timestamps=true each line comes stamped as the
  // kubelet stamps it ("2025-01-01T00:00:00.000000001Z line": RFC 3339, nanoseconds, fixed width;
  // FAKED: a counter that moves on by 1 ms per line set or appended, not the wall clock), and
  // sinceTime=STAMP leaves out the lines stamped before STAMP (that instant's are kept, as the
  // kubelet keeps them). Every other log query parameter (tailLines too) is ignored.
  void setPodLog(const std::string& ns, const std::string& pod, const std::string& text);
  // While on, a created pod labelled kueue.x-k8s.io/queue-name gets what Kueue's webhook gives it:
  // spec.schedulingGates [kueue.x-k8s.io/admission], the label kueue.x-k8s.io/managed: "true",
  // and the status of a gated pod (Pending, PodScheduled False, reason SchedulingGated).
  void enableKueueAdmission(bool on);
  // Kueue admits the pod group `group` (label kueue.x-k8s.io/pod-group-name) of namespace `ns`:
  // the admission gate leaves each of its pods (MODIFIED events). Returns the pods ungated.
  int admitKueueGroup(const std::string& ns, const std::string& group);
  // Appends whole lines to the pod's log (a running container writing more).
  void appendPodLog(const std::string& ns, const std::string& pod, const std::string& text);

  struct State;

 private:
  std::unique_ptr<State> state_;
  std::unique_ptr<http::Server> server_;
};

}  // namespace ddp::controller::kube::testing
