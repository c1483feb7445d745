#pragma once
// JSON text for the nested parts of a JobRecord (conditions, workers, progress), as
// SqliteJobStore stores them (Note [Job store schema] in sqlite_job_store.h). Keys are the
// field names (camelCase). Decoding ignores unknown keys and defaults missing ones, so fields
// can be added without a schema migration. Non-finite doubles (a NaN loss) are written as the
// strings "NaN", "Infinity" and "-Infinity" (JSON has no such numbers); an absent
// testAccuracy is null; absent language-model figures (valLoss, tokensPerSecond, mfu) have no
// key, and a record written before they existed reads with none.
// Thread model: pure functions, no shared state.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "controller/store/job_record.h"

namespace ddp::controller {

std::string conditionsToJson(const std::vector<JobCondition>& conditions);
std::string workersToJson(const std::vector<WorkerRecord>& workers);
std::string progressToJson(const JobProgress& progress);

// InvalidArgument saying what is wrong (not JSON, a field of the wrong type, ...).
Result<std::vector<JobCondition>> conditionsFromJson(std::string_view text);
Result<std::vector<WorkerRecord>> workersFromJson(std::string_view text);
Result<JobProgress> progressFromJson(std::string_view text);

}  // namespace ddp::controller
