#pragma once
// The body of GET /v1/jobs/{name}/flightrecords (docs/API.md).
// Thread model: a pure function.

#include <string>
#include <vector>

#include "controller/jobs/hang/flight_records.h"

namespace ddp::controller {

// {"flightRecords": [{"time", "reason", "message", "generation", "summary", "ranks": [...]}]}
std::string flightRecordsJson(const std::vector<FlightRecordEvent>& events);

}  // namespace ddp::controller
