#pragma once
// The controller's REST API token kept in a Kubernetes Secret (--token-secret NAME), so that a
// Helm chart need not generate it: every render of the chart is the same (GitOps: helm template
// has no cluster to look an earlier token up in), and every replica and every restart uses the
// same token.
//
// Note [Token Secret]
// Each replica at start reads Secret NAME in its namespace and takes the token under key
// "token" (base64 in `data`, as the API server returns it). When the Secret is absent, it
// creates it with a fresh random token (32 random bytes as hex); when that create finds the
// Secret there (AlreadyExists: another replica won the race), it reads the winner's. The
// controller never rotates or deletes it: delete the Secret (or write another token into it)
// and restart the controller to change the token. A Secret without the key, or with an empty
// or undecodable token, is an error naming the Secret.
// Thread model: a blocking function of the calling thread (each call has the client's deadline).

#include <string>

#include "common/status.h"
#include "controller/launch/kubernetes/base64.h"
#include "controller/launch/kubernetes/kube_client.h"

namespace ddp::controller::kube {

inline constexpr const char* kApiTokenKey = "token";

// The token in Secret `nameSpace`/`name`, creating the Secret when absent (Note [Token Secret]).
Result<std::string> loadOrCreateTokenSecret(KubeClient& client, const std::string& nameSpace, const std::string& name);


}  // namespace ddp::controller::kube
