#pragma once
// Whose an object named like one of a job's objects is (Note [Object ownership]): the launcher
// creates, replaces and deletes only the objects its job owns.
//
// Note [Object ownership]
// A job's objects are named after the job (worker_objects.h), so an object of that name may be
// another's: a job named like the release (`ddp`) meets the controller's own Service, a user's
// Secret may be called `<job>-worker-token`. An object is the job's when
//  - one of its ownerReferences carries the uid of the job's DDPJob (when it has one), or
//  - it has no controller ownerReference and carries the labels the launcher gives
//    (ddp.dev/job=<job>, app.kubernetes.io/managed-by=ddp-controller): a job submitted through
//    the REST API, or a DDPJob whose owner was not known yet when its objects were made.
// An object whose controller ownerReference is a DDPJob of the job's name with another uid is an
// earlier incarnation's: that DDPJob was deleted (one name, one DDPJob), the garbage collector
// is removing its objects, and the launcher may delete it and wait until it is gone. Any other
// object is another's: a create that meets it fails the job, naming the object and its owner
// (the job cannot launch under that name), and forgetJob leaves it alone.
// Thread model: pure functions.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "controller/launch/kubernetes/worker_objects.h"

namespace ddp::controller::kube {

enum class Ownership { kJobs, kEarlierIncarnation, kAnother };

Ownership ownershipOf(const nlohmann::json& object, const std::string& job, const std::optional<JobOwner>& owner);
// Who owns `object`, for an error: "owned by Deployment ddp", "no owner reference, labels
// {app.kubernetes.io/name=ddp}".
std::string describeOwner(const nlohmann::json& object);

}  // namespace ddp::controller::kube
