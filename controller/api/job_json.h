#pragma once
// The job object of the REST API (docs/API.md, "The job object") and the other JSON bodies,
// from the controller's records. nlohmann::json stays out of this header.
// Thread model: pure functions.

#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "controller/store/job_record.h"

namespace ddp::controller {

// {"metadata": ..., "spec": ..., "status": ...}; the spec as JSON with every field.
std::string jobJson(const JobRecord& record);
// {"jobs": [job, ...]}
std::string jobListJson(const std::vector<JobRecord>& records);
std::string eventsJson(const std::vector<JobEvent>& events);
std::string checkpointsJson(const std::vector<CheckpointRecord>& checkpoints);
// 400 body: {"error": ..., "details": [{"path", "message", "line", "column"}]}
std::string specErrorsJson(const std::string& error, const std::vector<SpecError>& errors);

}  // namespace ddp::controller
