#pragma once
// readJobWorkerToken(): the worker token of one job, read read-only from the controller's SQLite
// job store (STATE_DIR/jobs.db, table jobs, column worker_token; see
// controller/store/sqlite_job_store.cc). The API never serves that token; a real launcher hands
// it to its workers in DDP_JOB_TOKEN, the benchmark's simulated workers take it from here.
//
// Note [SQLite by dlopen]: bench targets link ddp_worker_all only (bench/CMakeLists.txt), not
// SQLite::SQLite3, so this file loads libsqlite3.so.0 at run time and calls the same C API
// through dlsym. With `target_link_libraries(bench_controller PRIVATE SQLite::SQLite3)` the
// lookups could become plain calls.
// Thread model: a free function; blocks up to `busyTimeout` on a locked database.

#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::bench {

Result<std::string> readJobWorkerToken(const std::string& dbPath, const std::string& job,
                                       Duration busyTimeout = std::chrono::seconds(5));

}  // namespace ddp::bench
