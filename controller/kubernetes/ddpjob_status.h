#pragma once
// What the controller writes into a DDPJob's status, and when (pure functions; the reconciler
// carries them out). The status is what kubectl users read: phase, conditions, readyWorkers,
// worldSize, rendezvousGeneration (the rendezvous round: metadata.generation is the spec's),
// restarts, progress, startTime, completionTime, observedGeneration. Per-worker heartbeat detail
// stays in the REST API.
//
// Note [Status writes]
// A running job's figures (step, loss, samples/s) change every heartbeat; writing each change
// would load the API server with one write per job per second. So: a change of phase, conditions,
// readyWorkers, worldSize, rendezvousGeneration or restarts (what a user or a tool waits for) is
// written at once; a change of progress only (or observedGeneration) at most every
// kStatusInterval (10 s); an unchanged status never. Writes are merge patches of the status
// subresource.
// Thread model: pure functions.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "controller/store/job_record.h"

namespace ddp::controller::kube {

inline constexpr Duration kStatusInterval = std::chrono::seconds(10);

// The DDPJob status of a job record (the CRD's status schema).
nlohmann::json ddpJobStatus(const JobRecord& record, int64_t observedGeneration);

// The status of a DDPJob the controller refused: phase Failed, condition Valid False naming
// every error.
nlohmann::json invalidJobStatus(const std::string& errors, int64_t observedGeneration, int64_t nowMs);

// `status` (ddpJobStatus) of a job the reconciler failed itself while the controller's record
// says otherwise (a schedule timeout carried out as a cancel: JobCalls::fail unset): phase
// Failed, `message`, condition Failed True with `reason` (replacing a Cancelled condition).
nlohmann::json withFailure(nlohmann::json status, const std::string& reason, const std::string& message,
                           int64_t atMs);

// Note [Finished before]: whether a DDPJob's written status says it finished (Succeeded, Failed,
// Cancelled) for its current spec, so a new leader leaves it alone; a refusal (condition Valid
// False) of an older generation does not count: the edited spec is looked at again.
bool finishedBefore(const nlohmann::json& ddpJob);

// "2026-01-02T03:04:05Z" / "...05.678Z" as milliseconds since the Unix epoch; nullopt otherwise.
std::optional<int64_t> parseRfc3339Ms(const std::string& text);

// Whether to write `desired` now, given what was last written (null: nothing yet) and when.
bool statusWriteDue(const nlohmann::json& written, TimePoint writtenAt, const nlohmann::json& desired, TimePoint now);

}  // namespace ddp::controller::kube
