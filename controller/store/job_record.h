#pragma once
// The controller's view of one training job: plain value types stored by a JobStore
// (controller/store/job_store.h) and served by the REST API.
// Times are milliseconds since the Unix epoch (wall clock); 0 means "not yet".
// Thread model: plain values, no shared state.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::controller {

// kSuspended (spec.suspend, Note [Suspended jobs] in controller/jobs/lifecycle/suspension.h) is
// last so that the others keep their values; it is not terminal: the job resumes from it.
enum class JobPhase { kPending, kRunning, kRestarting, kSucceeded, kFailed, kCancelled, kSuspended };

// "Pending", "Running", "Restarting", "Succeeded", "Failed", "Cancelled", "Suspended".
const char* jobPhaseName(JobPhase phase);
// Exact (case-sensitive) names as jobPhaseName() writes them; false on anything else.
bool parseJobPhase(std::string_view text, JobPhase* out);
// Succeeded, Failed and Cancelled: the job will not run again.
bool isTerminal(JobPhase phase);

// Condition types (JobCondition::type).
inline constexpr const char* kConditionCreated = "Created";
inline constexpr const char* kConditionRunning = "Running";
inline constexpr const char* kConditionRestarting = "Restarting";
inline constexpr const char* kConditionSucceeded = "Succeeded";
inline constexpr const char* kConditionFailed = "Failed";
inline constexpr const char* kConditionCancelled = "Cancelled";
// True while the job is suspended (reason JobSuspended), False once resumed (JobResumed).
inline constexpr const char* kConditionSuspended = "Suspended";
// True while the job's checkpoints fail (the last attempt was not committed), with the last
// error; False again (reason CheckpointCommitted) once one commits. Absent if none ever failed.
inline constexpr const char* kConditionCheckpointsFailing = "CheckpointsFailing";

// Event types (JobEvent::type).
inline constexpr const char* kEventNormal = "Normal";
inline constexpr const char* kEventWarning = "Warning";

struct JobCondition {
  std::string type;  // kCondition*
  bool status = true;
  std::string reason;   // CamelCase, machine-readable ("WorkerExited")
  std::string message;  // for people
  int64_t lastTransitionMs = 0;  // when `status` last changed

  bool operator==(const JobCondition& other) const = default;
};

struct JobEvent {
  int64_t timeMs = 0;
  std::string type = kEventNormal;  // kEventNormal or kEventWarning
  std::string reason, message;

  bool operator==(const JobEvent& other) const = default;
};

struct WorkerRecord {
  int rank = -1;
  std::string id, host, advertiseAddress;
  int64_t pid = 0;
  int64_t pidStartTime = 0;  // the process's start time (tells a reused pid apart)
  std::string state;
  int64_t lastHeartbeatMs = 0;
  int64_t step = 0;

  bool operator==(const WorkerRecord& other) const = default;
};

struct JobProgress {
  int64_t step = 0, totalSteps = 0;
  int64_t epoch = 0, epochs = 0;
  double loss = 0;  // may be NaN or infinite (a diverged run); stored as such
  double samplesPerSecond = 0;
  std::optional<double> testAccuracy;
  double etaSeconds = 0;
  // Language models (rank 0's last report; empty for other models and in records written
  // before these fields existed). perplexity() is exp(valLoss), never stored.
  std::optional<double> valLoss;
  std::optional<double> tokensPerSecond;
  std::optional<double> mfu;
  std::optional<double> perplexity() const;

  // Field-wise; NaN equals NaN here (a stored NaN loss reads back equal).
  bool operator==(const JobProgress& other) const;
};

struct CheckpointRecord {
  int64_t step = 0;
  int64_t timeMs = 0;
  int64_t bytes = 0;
  int worldSize = 0;
  std::string path;

  bool operator==(const CheckpointRecord& other) const = default;
};

struct JobRecord {
  std::string name, uid;
  std::string specYaml;     // the validated spec (JobSpec::toYaml())
  std::string workerToken;  // the job's worker token (secret: never log or serve it)
  int64_t createdMs = 0, startMs = 0, completionMs = 0;  // 0: not yet
  JobPhase phase = JobPhase::kPending;
  std::vector<JobCondition> conditions;
  int64_t generation = 0;
  int restarts = 0;
  JobProgress progress;
  std::vector<WorkerRecord> workers;

  // Adds the condition of this type or updates it in place. `reason` and `message` are always
  // replaced; lastTransitionMs becomes nowMs only when the condition is new or its status
  // changes. Returns true when anything changed (callers update the store only then).
  bool setCondition(const std::string& type, bool status, std::string reason, std::string message,
                    int64_t nowMs);
  // The condition of this type, or nullptr.
  const JobCondition* findCondition(std::string_view type) const;

  bool operator==(const JobRecord& other) const = default;
};

}  // namespace ddp::controller
