#pragma once
// SqliteJobStore: the JobStore in one local SQLite file (the controller keeps it in its state
// directory).
//
// Note [Job store durability]
//  - The file is created with mode 0600 (it holds worker tokens); an existing job store open
//    to group or others is restricted to 0600 on open, and so are its -wal and -shm files.
//    SQLite creates those with the database file's mode.
//  - journal_mode=WAL and synchronous=FULL: every commit fsyncs the write-ahead log before
//    the call returns, so a job whose create() returned ok survives SIGKILL of the controller
//    and power loss. A crash mid-transaction leaves the database as of the last commit (the
//    uncommitted tail of the WAL is ignored on the next open).
//  - Each method is one transaction: BEGIN IMMEDIATE ... COMMIT for writes (the write lock is
//    taken up front, so a writer never fails half-way on a lock upgrade), a read transaction
//    for reads of more than one statement (one snapshot), autocommit for single SELECTs.
//  - open() reads before it writes: a file that is not a SQLite database or is corrupt (PRAGMA
//    quick_check) gives DataLoss naming the path, and another application's database or a
//    newer schema gives FailedPrecondition; either way the file is left untouched.
//
// Note [Job store schema]
//  Tables (STRICT): jobs (one row per job; `id` AUTOINCREMENT, so a job removed and created
//  again under the same name never inherits old events), events (job_id, AUTOINCREMENT id
//  giving the order; capped at kMaxEventsPerJob per job on append), checkpoints (primary key
//  job_id + step). events and checkpoints go with their job (ON DELETE CASCADE, foreign_keys
//  on). The nested status parts of a job (conditions, workers, progress) are JSON text columns
//  (job_record_json.h): they are always read and written with the job as a whole and never
//  queried by SQL, and JSON lets fields be added without a migration. The phase is its name.
//  PRAGMA application_id marks the file as a job store; PRAGMA user_version holds the schema
//  version (kSchemaVersion). open() creates the schema in an empty file, accepts the current
//  version, migrates an older one inside its write transaction (1 -> 2 adds flight_records:
//  one JSON document per hang verdict, keyed by job and verdict time, the newest
//  kMaxFlightRecordsPerJob kept), and fails with FailedPrecondition for a newer or unknown
//  version, or for a SQLite file that is not a job store.
//
// Blocking: each call holds the store's mutex for one transaction. A transaction waits at most
// config.busyTimeout for a lock held by another connection (another process on the same file)
// and then fails with Timeout; everything else it waits for is local disk I/O.
//
// Thread model: thread-safe. One SQLite connection, used under mu_ by one thread at a time;
// no threads are started. Several SqliteJobStores (or processes) may open the same file.

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "controller/store/job_store.h"

namespace ddp::controller {

class SqliteDb;         // sqlite_db.h (keeps <sqlite3.h> out of this header)
class SqliteStatement;

inline constexpr std::chrono::milliseconds kDefaultJobStoreBusyTimeout{5000};

struct SqliteJobStoreConfig {
  // How long a call waits for another connection's lock on the file before Timeout.
  std::chrono::milliseconds busyTimeout = kDefaultJobStoreBusyTimeout;

  // InvalidArgument unless 0 < busyTimeout <= 10 min.
  Status validate() const;
};

class SqliteJobStore final : public JobStore {
 public:
  // The schema version this build writes (PRAGMA user_version).
  static constexpr int kSchemaVersion = 2;
  // PRAGMA application_id of a job store file ("DDPJ").
  static constexpr int32_t kApplicationId = 0x4444504A;

  // Opens the store at `path`, creating the file (0600) and the schema when absent. Errors:
  // DataLoss (not a SQLite database, or corrupt), FailedPrecondition (newer/unknown schema
  // version, or another application's database), Unavailable (cannot create/open the file,
  // e.g. a missing directory), Timeout (locked by another process), InvalidArgument (config).
  static Result<std::unique_ptr<SqliteJobStore>> open(const std::string& path,
                                                      const SqliteJobStoreConfig& config = {});
  ~SqliteJobStore() override;

  Status create(const JobRecord& job) override;
  Result<JobRecord> get(const std::string& name) override;
  Result<std::vector<JobRecord>> list() override;
  Status update(const JobRecord& job) override;
  Status updateSpec(const std::string& name, const std::string& specYaml) override;
  Status remove(const std::string& name) override;
  Status appendEvent(const std::string& name, const JobEvent& event) override;
  Result<std::vector<JobEvent>> events(const std::string& name) override;
  Status addCheckpoint(const std::string& name, const CheckpointRecord& checkpoint) override;
  Result<std::vector<CheckpointRecord>> checkpoints(const std::string& name) override;
  Status retainCheckpoints(const std::string& name, const std::vector<int64_t>& steps) override;
  Status putFlightRecord(const std::string& name, int64_t timeMs, const std::string& recordJson) override;
  Result<std::vector<std::string>> flightRecords(const std::string& name) override;

  // PRAGMA integrity_check over the whole file: ok, or DataLoss with SQLite's findings.
  Status checkIntegrity();
  const std::string& path() const { return path_; }

 private:
  SqliteJobStore(std::string path, std::unique_ptr<SqliteDb> db);

  // Helpers; each runs inside the caller's transaction with mu_ held.
  Status initSchema();
  Result<int64_t> jobId(const std::string& name);
  Result<JobRecord> readJob(SqliteStatement& row);
  Status decodeError(const std::string& job, const Status& st) const;
  // Keeps the job's newest `keep` rows of `table` (newest: the highest `orderColumn`).
  Status keepNewest(const std::string& table, const std::string& orderColumn, int64_t jobId, int64_t keep);

  const std::string path_;
  std::mutex mu_;                  // guards db_ (the connection and its statements)
  std::unique_ptr<SqliteDb> db_;
};

}  // namespace ddp::controller
