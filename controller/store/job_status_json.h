#pragma once
// The parts of a job's status as its readers see them: the REST API's job object
// (api/job_json.cc) and the DDPJob status (kubernetes/ddpjob_status.cc) write the same
// conditions, progress and times from the record's types. The job store's own JSON of these
// parts (job_record_json.h) is another form, for storage (times in milliseconds, NaN kept).
// Thread model: pure functions.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/store/job_record.h"

namespace ddp::controller {

// RFC 3339 UTC with milliseconds ("2026-11-23T10:00:00.123Z"); "" for 0.
std::string rfc3339(int64_t unixMs);
// rfc3339(), or null for 0 (not yet).
nlohmann::json timeOrNull(int64_t unixMs);
// [{"type", "status": "True"|"False", "reason", "message", "lastTransitionTime"}, ...]
nlohmann::json conditionsJson(const std::vector<JobCondition>& conditions);
// {"step", "totalSteps", "epoch", "epochs", "loss", "samplesPerSecond", "testAccuracy",
//  "etaSeconds", "valLoss", "perplexity", "tokensPerSecond", "mfu"}; unknown or non-finite
// figures are null.
nlohmann::json progressJson(const JobProgress& progress);

}  // namespace ddp::controller
