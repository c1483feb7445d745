#include "controller/store/sqlite_job_store.h"

#include <algorithm>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/checkpoint/atomic_file.h"
#include "controller/store/job_record_json.h"
#include "controller/store/sqlite_db.h"

namespace ddp::controller {

namespace {

// Note [Job store schema]. Constant text: never built from data.
constexpr const char* kSchemaSql = R"sql(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  uid TEXT NOT NULL,
  spec_yaml TEXT NOT NULL,
  worker_token TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,
  completion_ms INTEGER NOT NULL,
  phase TEXT NOT NULL,
  generation INTEGER NOT NULL,
  restarts INTEGER NOT NULL,
  conditions_json TEXT NOT NULL,
  progress_json TEXT NOT NULL,
  workers_json TEXT NOT NULL
) STRICT;
CREATE INDEX jobs_by_age ON jobs (created_ms, id);
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  time_ms INTEGER NOT NULL,
  type TEXT NOT NULL,
  reason TEXT NOT NULL,
  message TEXT NOT NULL
) STRICT;
CREATE INDEX events_by_job ON events (job_id, id);
CREATE TABLE checkpoints (
  job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  time_ms INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  world_size INTEGER NOT NULL,
  path TEXT NOT NULL,
  PRIMARY KEY (job_id, step)
) STRICT, WITHOUT ROWID;
)sql";

// Version 2 adds this table (and open() adds it to a version-1 file: Note [Job store schema]).
constexpr const char* kFlightRecordsSql = R"sql(
CREATE TABLE flight_records (
  job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  time_ms INTEGER NOT NULL,
  record_json TEXT NOT NULL,
  PRIMARY KEY (job_id, time_ms)
) STRICT, WITHOUT ROWID;
)sql";

// The oldest schema version open() migrates (to kSchemaVersion).
constexpr int64_t kOldestMigratedVersion = 1;

// The columns readJob() reads, in order.
#define DDP_JOB_COLUMNS                                                                 \
  "name, uid, spec_yaml, worker_token, created_ms, start_ms, completion_ms, phase, "    \
  "generation, restarts, conditions_json, progress_json, workers_json"

Status fileError(const std::string& what, const std::string& path, int err) {
  return unavailable(what + " job store " + path + ": " + std::strerror(err));
}

// Restricts an existing file to 0600 when group or others have any access; ok if absent.
Status restrictMode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? Status::ok() : fileError("cannot stat", path, errno);
  }
  if ((st.st_mode & 077) == 0) return Status::ok();
  if (::chmod(path.c_str(), 0600) != 0) {
    return failedPrecondition("job store " + path + " is accessible to other users and " +
                              "cannot be restricted to mode 0600: " + std::strerror(errno));
  }
  return Status::ok();
}

// Creates the database file with mode 0600 (whatever the umask) and makes its directory entry
// durable; an existing file must be a regular file (Note [Job store durability]).
Status prepareFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    int rc = ::fchmod(fd, 0600);
    int err = errno;
    ::close(fd);
    if (rc != 0) return fileError("cannot chmod", path, err);
    std::string::size_type slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    return runtime::syncDir(dir);
  }
  if (errno != EEXIST) return fileError("cannot create", path, errno);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fileError("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) return invalidArgument("job store " + path + " is not a regular file");
  return Status::ok();
}

// Every row of `sql` about one job (?1 = jobId), each made into a T by `row`.
template <typename T, typename RowFn>
Result<std::vector<T>> jobRows(SqliteDb& db, const std::string& sql, int64_t jobId, RowFn row) {
  DDP_ASSIGN_OR_RETURN(SqliteStatement stmt, db.prepare(sql));
  stmt.bind(1, jobId);
  std::vector<T> out;
  while (true) {
    DDP_ASSIGN_OR_RETURN(bool more, stmt.step());
    if (!more) return out;
    out.push_back(row(stmt));
  }
}

// Runs an integrity pragma; DataLoss with (up to 5 of) SQLite's findings unless it says "ok".
Status checkPragma(SqliteDb& db, const char* pragma) {
  DDP_ASSIGN_OR_RETURN(SqliteStatement stmt, db.prepare(pragma));
  std::string findings;
  for (int rows = 0; rows < 5; ++rows) {
    DDP_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    std::string line = stmt.textAt(0);
    if (rows == 0 && line == "ok") return Status::ok();
    findings += (rows == 0 ? "" : "; ") + line;
  }
  return dataLoss("job store " + db.path() + " is corrupt (" + pragma + "): " + findings);
}

// What a database file says it is (Note [Job store schema]).
struct FileIdentity {
  int64_t applicationId = 0;
  int64_t version = 0;
  int64_t objects = 0;  // tables, indexes, ...
  bool empty() const { return applicationId == 0 && version == 0 && objects == 0; }
};

Result<FileIdentity> readIdentity(SqliteDb& db) {
  FileIdentity id;
  DDP_ASSIGN_OR_RETURN(id.applicationId, db.queryInt("PRAGMA application_id"));
  DDP_ASSIGN_OR_RETURN(id.version, db.queryInt("PRAGMA user_version"));
  DDP_ASSIGN_OR_RETURN(id.objects, db.queryInt("SELECT count(*) FROM sqlite_master"));
  return id;
}

// Ok for a job store at this build's schema version; FailedPrecondition saying why not.
Status checkIdentity(const std::string& path, const FileIdentity& id) {
  const int64_t supported = SqliteJobStore::kSchemaVersion;
  if (id.applicationId != SqliteJobStore::kApplicationId) {
    return failedPrecondition("job store " + path +
                              " is a SQLite database of another application (application_id " +
                              std::to_string(id.applicationId) + "), not a job store");
  }
  if (id.version > supported) {
    return failedPrecondition("job store " + path + " has schema version " +
                              std::to_string(id.version) +
                              ", newer than this controller supports (" +
                              std::to_string(supported) + "); run a newer controller");
  }
  if (id.version != supported && id.version < kOldestMigratedVersion) {
    return failedPrecondition("job store " + path + " has unknown schema version " +
                              std::to_string(id.version) + " (this controller supports " +
                              std::to_string(supported) + ")");
  }
  return Status::ok();
}

}  // namespace

Status SqliteJobStoreConfig::validate() const {
  if (busyTimeout <= std::chrono::milliseconds::zero() || busyTimeout > std::chrono::minutes(10)) {
    return invalidArgument("job store busyTimeout must be in (0, 10 min], got " +
                           std::to_string(busyTimeout.count()) + " ms");
  }
  return Status::ok();
}

Result<std::unique_ptr<SqliteJobStore>> SqliteJobStore::open(const std::string& path,
                                                             const SqliteJobStoreConfig& config) {
  DDP_RETURN_IF_ERROR(config.validate());
  if (path.empty()) return invalidArgument("job store path is empty");
  // A bare file name gets "./": SQLite then never reads it as ":memory:" or a "file:" URI.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  DDP_RETURN_IF_ERROR(prepareFile(file));
  DDP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::open(file, config.busyTimeout));

  // Read-only checks first, so that a file that is not ours is left exactly as it was. The
  // first statement reads the file: a garbage file fails here with SQLITE_NOTADB (DataLoss).
  DDP_ASSIGN_OR_RETURN(FileIdentity identity, readIdentity(*db));
  if (!identity.empty()) {
    DDP_RETURN_IF_ERROR(checkIdentity(file, identity));
  }
  DDP_RETURN_IF_ERROR(checkPragma(*db, "PRAGMA quick_check"));
  for (const char* suffix : {"", "-wal", "-shm"}) {
    DDP_RETURN_IF_ERROR(restrictMode(file + suffix));
  }

  DDP_ASSIGN_OR_RETURN(std::string journal, db->queryText("PRAGMA journal_mode=WAL"));
  if (journal != "wal") {
    return failedPrecondition("job store " + file + ": cannot use WAL journal mode (got '" +
                              journal + "'; is the file on a network filesystem?)");
  }
  DDP_RETURN_IF_ERROR(db->exec("PRAGMA synchronous=FULL"));
  DDP_RETURN_IF_ERROR(db->exec("PRAGMA foreign_keys=ON"));
  DDP_ASSIGN_OR_RETURN(int64_t foreignKeys, db->queryInt("PRAGMA foreign_keys"));
  if (foreignKeys != 1) return internalError("job store " + file + ": SQLite lacks foreign keys");

  std::unique_ptr<SqliteJobStore> store(new SqliteJobStore(file, std::move(db)));
  {
    std::lock_guard<std::mutex> lock(store->mu_);
    DDP_RETURN_IF_ERROR(store->initSchema());
  }
  return store;
}

SqliteJobStore::SqliteJobStore(std::string path, std::unique_ptr<SqliteDb> db)
    : path_(std::move(path)), db_(std::move(db)) {}

SqliteJobStore::~SqliteJobStore() = default;

Status SqliteJobStore::initSchema() {
  // Inside a write transaction: two processes opening a new file create the schema once.
  DDP_ASSIGN_OR_RETURN(SqliteTransaction txn,
                       SqliteTransaction::begin(*db_, SqliteTransaction::Kind::kWrite));
  DDP_ASSIGN_OR_RETURN(FileIdentity identity, readIdentity(*db_));
  if (!identity.empty()) {
    DDP_RETURN_IF_ERROR(checkIdentity(path_, identity));
    if (identity.version == 1) {  // version 1 -> 2: the flight_records table
      DDP_RETURN_IF_ERROR(db_->exec(kFlightRecordsSql));
      DDP_RETURN_IF_ERROR(
          db_->exec(("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str()));
    }
    return txn.commit();
  }
  DDP_RETURN_IF_ERROR(db_->exec(kSchemaSql));
  DDP_RETURN_IF_ERROR(db_->exec(kFlightRecordsSql));
  // PRAGMA values cannot be bound; these are compile-time constants.
  DDP_RETURN_IF_ERROR(
      db_->exec(("PRAGMA application_id=" + std::to_string(kApplicationId)).c_str()));
  DDP_RETURN_IF_ERROR(
      db_->exec(("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str()));
  return txn.commit();
}

Result<int64_t> SqliteJobStore::jobId(const std::string& name) {
  DDP_ASSIGN_OR_RETURN(SqliteStatement stmt, db_->prepare("SELECT id FROM jobs WHERE name = ?1"));
  stmt.bind(1, name);
  DDP_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return notFound("job '" + name + "' not found");
  return stmt.int64At(0);
}

Status SqliteJobStore::decodeError(const std::string& job, const Status& st) const {
  return dataLoss("job store " + path_ + ": job '" + job + "': " + st.message());
}

Result<JobRecord> SqliteJobStore::readJob(SqliteStatement& row) {
  JobRecord job;
  job.name = row.textAt(0);
  job.uid = row.textAt(1);
  job.specYaml = row.textAt(2);
  job.workerToken = row.textAt(3);
  job.createdMs = row.int64At(4);
  job.startMs = row.int64At(5);
  job.completionMs = row.int64At(6);
  std::string phase = row.textAt(7);
  if (!parseJobPhase(phase, &job.phase)) {
    return decodeError(job.name, invalidArgument("unknown phase '" + phase + "'"));
  }
  job.generation = row.int64At(8);
  job.restarts = static_cast<int>(row.int64At(9));
  Result<std::vector<JobCondition>> conditions = conditionsFromJson(row.textAt(10));
  if (!conditions.isOk()) return decodeError(job.name, conditions.status());
  job.conditions = std::move(conditions).value();
  Result<JobProgress> progress = progressFromJson(row.textAt(11));
  if (!progress.isOk()) return decodeError(job.name, progress.status());
  job.progress = std::move(progress).value();
  Result<std::vector<WorkerRecord>> workers = workersFromJson(row.textAt(12));
  if (!workers.isOk()) return decodeError(job.name, workers.status());
  job.workers = std::move(workers).value();
  return job;
}

Status SqliteJobStore::create(const JobRecord& job) {
  if (job.name.empty()) return invalidArgument("job name is empty");
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteTransaction txn,
                       SqliteTransaction::begin(*db_, SqliteTransaction::Kind::kWrite));
  Result<int64_t> existing = jobId(job.name);
  if (existing.isOk()) return alreadyExists("job '" + job.name + "' already exists");
  if (existing.status().code() != StatusCode::kNotFound) return existing.status();

  DDP_ASSIGN_OR_RETURN(SqliteStatement insert,
                       db_->prepare("INSERT INTO jobs (" DDP_JOB_COLUMNS ") VALUES "
                                    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"));
  insert.bind(1, job.name)
      .bind(2, job.uid)
      .bind(3, job.specYaml)
      .bind(4, job.workerToken)
      .bind(5, job.createdMs)
      .bind(6, job.startMs)
      .bind(7, job.completionMs)
      .bind(8, jobPhaseName(job.phase))
      .bind(9, job.generation)
      .bind(10, int64_t{job.restarts})
      .bind(11, conditionsToJson(job.conditions))
      .bind(12, progressToJson(job.progress))
      .bind(13, workersToJson(job.workers));
  DDP_RETURN_IF_ERROR(insert.run());
  return txn.commit();
}

Result<JobRecord> SqliteJobStore::get(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  // One statement: its own (autocommit) read transaction.
  DDP_ASSIGN_OR_RETURN(SqliteStatement stmt,
                       db_->prepare("SELECT " DDP_JOB_COLUMNS " FROM jobs WHERE name = ?1"));
  stmt.bind(1, name);
  DDP_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return notFound("job '" + name + "' not found");
  return readJob(stmt);
}

Result<std::vector<JobRecord>> SqliteJobStore::list() {
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteStatement stmt,
                       db_->prepare("SELECT " DDP_JOB_COLUMNS " FROM jobs ORDER BY created_ms, id"));
  std::vector<JobRecord> out;
  while (true) {
    DDP_ASSIGN_OR_RETURN(bool row, stmt.step());
    if (!row) break;
    DDP_ASSIGN_OR_RETURN(JobRecord job, readJob(stmt));
    out.push_back(std::move(job));
  }
  return out;
}

Status SqliteJobStore::update(const JobRecord& job) {
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteTransaction txn,
                       SqliteTransaction::begin(*db_, SqliteTransaction::Kind::kWrite));
  int64_t id = 0;
  {
    DDP_ASSIGN_OR_RETURN(SqliteStatement find,
                         db_->prepare("SELECT id, uid FROM jobs WHERE name = ?1"));
    find.bind(1, job.name);
    DDP_ASSIGN_OR_RETURN(bool row, find.step());
    if (!row) return notFound("job '" + job.name + "' not found");
    if (find.textAt(1) != job.uid) {
      return failedPrecondition("job '" + job.name + "' was replaced: stored uid " +
                                find.textAt(1) + ", update for uid " + job.uid);
    }
    id = find.int64At(0);
  }
  DDP_ASSIGN_OR_RETURN(
      SqliteStatement stmt,
      db_->prepare("UPDATE jobs SET created_ms = ?2, start_ms = ?3, completion_ms = ?4, "
                   "phase = ?5, generation = ?6, restarts = ?7, conditions_json = ?8, "
                   "progress_json = ?9, workers_json = ?10 WHERE id = ?1"));
  stmt.bind(1, id)
      .bind(2, job.createdMs)
      .bind(3, job.startMs)
      .bind(4, job.completionMs)
      .bind(5, jobPhaseName(job.phase))
      .bind(6, job.generation)
      .bind(7, int64_t{job.restarts})
      .bind(8, conditionsToJson(job.conditions))
      .bind(9, progressToJson(job.progress))
      .bind(10, workersToJson(job.workers));
  DDP_RETURN_IF_ERROR(stmt.run());
  return txn.commit();
}

Status SqliteJobStore::updateSpec(const std::string& name, const std::string& specYaml) {
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteStatement stmt, db_->prepare("UPDATE jobs SET spec_yaml = ?2 WHERE name = ?1"));
  stmt.bind(1, name).bind(2, specYaml);
  DDP_RETURN_IF_ERROR(stmt.run());
  if (db_->changes() == 0) return notFound("job '" + name + "' not found");
  return Status::ok();
}

Status SqliteJobStore::remove(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteTransaction txn,
                       SqliteTransaction::begin(*db_, SqliteTransaction::Kind::kWrite));
  // Events and checkpoints go with the job (ON DELETE CASCADE).
  DDP_ASSIGN_OR_RETURN(SqliteStatement stmt, db_->prepare("DELETE FROM jobs WHERE name = ?1"));
  stmt.bind(1, name);
  DDP_RETURN_IF_ERROR(stmt.run());
  if (db_->changes() == 0) return notFound("job '" + name + "' not found");
  return txn.commit();
}

Status SqliteJobStore::keepNewest(const std::string& table, const std::string& orderColumn, int64_t jobId,
                                  int64_t keep) {
  // Deletes from the (keep+1)-th newest row down.
  DDP_ASSIGN_OR_RETURN(SqliteStatement trim,
                       db_->prepare("DELETE FROM " + table + " WHERE job_id = ?1 AND " + orderColumn + " <= (SELECT " +
                                    orderColumn + " FROM " + table + " WHERE job_id = ?1 ORDER BY " + orderColumn +
                                    " DESC LIMIT 1 OFFSET ?2)"));
  trim.bind(1, jobId).bind(2, keep);
  return trim.run();
}

Status SqliteJobStore::appendEvent(const std::string& name, const JobEvent& event) {
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteTransaction txn,
                       SqliteTransaction::begin(*db_, SqliteTransaction::Kind::kWrite));
  DDP_ASSIGN_OR_RETURN(int64_t id, jobId(name));
  {
    DDP_ASSIGN_OR_RETURN(SqliteStatement insert,
                         db_->prepare("INSERT INTO events (job_id, time_ms, type, reason, message) "
                                      "VALUES (?1, ?2, ?3, ?4, ?5)"));
    insert.bind(1, id).bind(2, event.timeMs).bind(3, event.type).bind(4, event.reason);
    insert.bind(5, event.message);
    DDP_RETURN_IF_ERROR(insert.run());
  }
  DDP_RETURN_IF_ERROR(keepNewest("events", "id", id, kMaxEventsPerJob));
  return txn.commit();
}

Result<std::vector<JobEvent>> SqliteJobStore::events(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteTransaction txn,
                       SqliteTransaction::begin(*db_, SqliteTransaction::Kind::kRead));
  DDP_ASSIGN_OR_RETURN(int64_t id, jobId(name));
  DDP_ASSIGN_OR_RETURN(
      std::vector<JobEvent> out,
      jobRows<JobEvent>(*db_, "SELECT time_ms, type, reason, message FROM events WHERE job_id = ?1 ORDER BY id", id,
                        [](const SqliteStatement& r) {
                          return JobEvent{r.int64At(0), r.textAt(1), r.textAt(2), r.textAt(3)};
                        }));
  DDP_RETURN_IF_ERROR(txn.commit());
  return out;
}

Status SqliteJobStore::addCheckpoint(const std::string& name, const CheckpointRecord& checkpoint) {
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteTransaction txn,
                       SqliteTransaction::begin(*db_, SqliteTransaction::Kind::kWrite));
  DDP_ASSIGN_OR_RETURN(int64_t id, jobId(name));
  DDP_ASSIGN_OR_RETURN(
      SqliteStatement stmt,
      db_->prepare("INSERT INTO checkpoints (job_id, step, time_ms, bytes, world_size, path) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (job_id, step) DO UPDATE SET "
                   "time_ms = excluded.time_ms, bytes = excluded.bytes, "
                   "world_size = excluded.world_size, path = excluded.path"));
  stmt.bind(1, id).bind(2, checkpoint.step).bind(3, checkpoint.timeMs).bind(4, checkpoint.bytes);
  stmt.bind(5, int64_t{checkpoint.worldSize}).bind(6, checkpoint.path);
  DDP_RETURN_IF_ERROR(stmt.run());
  return txn.commit();
}

Status SqliteJobStore::retainCheckpoints(const std::string& name, const std::vector<int64_t>& steps) {
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteTransaction txn,
                       SqliteTransaction::begin(*db_, SqliteTransaction::Kind::kWrite));
  DDP_ASSIGN_OR_RETURN(int64_t id, jobId(name));
  DDP_ASSIGN_OR_RETURN(std::vector<int64_t> stored,
                       jobRows<int64_t>(*db_, "SELECT step FROM checkpoints WHERE job_id = ?1", id,
                                        [](const SqliteStatement& r) { return r.int64At(0); }));
  for (int64_t step : stored) {
    if (std::find(steps.begin(), steps.end(), step) != steps.end()) continue;
    DDP_ASSIGN_OR_RETURN(SqliteStatement del, db_->prepare("DELETE FROM checkpoints WHERE job_id = ?1 AND step = ?2"));
    del.bind(1, id).bind(2, step);
    DDP_RETURN_IF_ERROR(del.run());
  }
  return txn.commit();
}

Result<std::vector<CheckpointRecord>> SqliteJobStore::checkpoints(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteTransaction txn,
                       SqliteTransaction::begin(*db_, SqliteTransaction::Kind::kRead));
  DDP_ASSIGN_OR_RETURN(int64_t id, jobId(name));
  DDP_ASSIGN_OR_RETURN(std::vector<CheckpointRecord> out,
                       jobRows<CheckpointRecord>(*db_,
                                                 "SELECT step, time_ms, bytes, world_size, path "
                                                 "FROM checkpoints WHERE job_id = ?1 ORDER BY step",
                                                 id, [](const SqliteStatement& r) {
                                                   return CheckpointRecord{r.int64At(0), r.int64At(1), r.int64At(2),
                                                                           static_cast<int>(r.int64At(3)), r.textAt(4)};
                                                 }));
  DDP_RETURN_IF_ERROR(txn.commit());
  return out;
}

Status SqliteJobStore::putFlightRecord(const std::string& name, int64_t timeMs, const std::string& recordJson) {
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteTransaction txn,
                       SqliteTransaction::begin(*db_, SqliteTransaction::Kind::kWrite));
  DDP_ASSIGN_OR_RETURN(int64_t id, jobId(name));
  {
    DDP_ASSIGN_OR_RETURN(SqliteStatement stmt,
                         db_->prepare("INSERT INTO flight_records (job_id, time_ms, record_json) VALUES (?1, ?2, ?3) "
                                      "ON CONFLICT (job_id, time_ms) DO UPDATE SET record_json = excluded.record_json"));
    stmt.bind(1, id).bind(2, timeMs).bind(3, recordJson);
    DDP_RETURN_IF_ERROR(stmt.run());
  }
  DDP_RETURN_IF_ERROR(keepNewest("flight_records", "time_ms", id, kMaxFlightRecordsPerJob));
  return txn.commit();
}

Result<std::vector<std::string>> SqliteJobStore::flightRecords(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  DDP_ASSIGN_OR_RETURN(SqliteTransaction txn,
                       SqliteTransaction::begin(*db_, SqliteTransaction::Kind::kRead));
  DDP_ASSIGN_OR_RETURN(int64_t id, jobId(name));
  DDP_ASSIGN_OR_RETURN(std::vector<std::string> out,
                       jobRows<std::string>(*db_, "SELECT record_json FROM flight_records WHERE job_id = ?1 ORDER BY time_ms",
                                            id, [](const SqliteStatement& r) { return r.textAt(0); }));
  DDP_RETURN_IF_ERROR(txn.commit());
  return out;
}

Status SqliteJobStore::checkIntegrity() {
  std::lock_guard<std::mutex> lock(mu_);
  return checkPragma(*db_, "PRAGMA integrity_check");
}

}  // namespace ddp::controller
