#include "bench/common/controller_load_job_token.h"

#include <dlfcn.h>
#include <sqlite3.h>

namespace ddp::bench {
namespace {

// The few sqlite3 entry points used here, resolved from libsqlite3 (Note [SQLite by dlopen]).
struct SqliteApi {
  decltype(&sqlite3_open_v2) open = nullptr;
  decltype(&sqlite3_close_v2) close = nullptr;
  decltype(&sqlite3_busy_timeout) busyTimeout = nullptr;
  decltype(&sqlite3_prepare_v2) prepare = nullptr;
  decltype(&sqlite3_bind_text) bindText = nullptr;
  decltype(&sqlite3_step) step = nullptr;
  decltype(&sqlite3_column_text) columnText = nullptr;
  decltype(&sqlite3_finalize) finalize = nullptr;
  decltype(&sqlite3_errmsg) errmsg = nullptr;
};

template <typename F>
bool resolve(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(::dlsym(lib, name));
  return *out != nullptr;
}

Result<SqliteApi> loadSqlite() {
  void* lib = ::dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return unavailable(std::string("cannot load libsqlite3.so.0: ") + ::dlerror());
  SqliteApi api;
  const bool ok = resolve(lib, "sqlite3_open_v2", &api.open) && resolve(lib, "sqlite3_close_v2", &api.close) &&
                  resolve(lib, "sqlite3_busy_timeout", &api.busyTimeout) &&
                  resolve(lib, "sqlite3_prepare_v2", &api.prepare) && resolve(lib, "sqlite3_bind_text", &api.bindText) &&
                  resolve(lib, "sqlite3_step", &api.step) && resolve(lib, "sqlite3_column_text", &api.columnText) &&
                  resolve(lib, "sqlite3_finalize", &api.finalize) && resolve(lib, "sqlite3_errmsg", &api.errmsg);
  // The library stays loaded for the life of the process (a handful of calls per run).
  if (!ok) return unavailable("libsqlite3.so.0 lacks a needed symbol");
  return api;
}

}  // namespace

Result<std::string> readJobWorkerToken(const std::string& dbPath, const std::string& job, Duration busyTimeout) {
  DDP_ASSIGN_OR_RETURN(SqliteApi api, loadSqlite());
  sqlite3* db = nullptr;
  if (api.open(dbPath.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string why = db != nullptr ? api.errmsg(db) : "out of memory";
    api.close(db);
    return unavailable("open " + dbPath + " read-only: " + why);
  }
  api.busyTimeout(db, static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(busyTimeout).count()));
  sqlite3_stmt* stmt = nullptr;
  Result<std::string> out = notFound("job " + job + " is not in " + dbPath);
  if (api.prepare(db, "SELECT worker_token FROM jobs WHERE name = ?1", -1, &stmt, nullptr) != SQLITE_OK) {
    out = unavailable("query " + dbPath + ": " + api.errmsg(db));
  } else {
    api.bindText(stmt, 1, job.c_str(), static_cast<int>(job.size()), SQLITE_TRANSIENT);
    const int rc = api.step(stmt);
    if (rc == SQLITE_ROW) {
      const unsigned char* text = api.columnText(stmt, 0);
      out = std::string(text != nullptr ? reinterpret_cast<const char*>(text) : "");
    } else if (rc != SQLITE_DONE) {
      out = unavailable("query " + dbPath + ": " + api.errmsg(db));
    }
  }
  api.finalize(stmt);
  api.close(db);
  return out;
}

}  // namespace ddp::bench
