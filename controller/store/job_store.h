#pragma once
// JobStore: the controller's durable job table (docs/API.md). One record per job plus its
// event log and its checkpoint list. SqliteJobStore (sqlite_job_store.h) keeps it in a local
// SQLite file; a Kubernetes-resource store can implement the same interface later.
//
// Contract shared by every implementation:
//  - Each method is one atomic step: it happens entirely or not at all, and once it has
//    returned ok it survives a crash of the controller (and, for SqliteJobStore, power loss).
//  - Errors: NotFound names the job; AlreadyExists names the job; InvalidArgument for an empty
//    name; DataLoss when stored data is corrupt; Timeout when the store stayed locked by
//    another process longer than the implementation's bound; Unavailable for I/O errors.
//  - Every call is bounded in time (the implementation documents its bound).
// Thread model: implementations are thread-safe (any method from any thread).

#include <string>
#include <vector>

#include "common/status.h"
#include "controller/store/job_record.h"

namespace ddp::controller {

// events() keeps at most this many events per job: the newest ones.
inline constexpr int kMaxEventsPerJob = 1000;
// flightRecords() keeps at most this many per job: the newest ones.
inline constexpr int kMaxFlightRecordsPerJob = 8;

class JobStore {
 public:
  virtual ~JobStore() = default;

  // Stores a new job with every field of `job`. AlreadyExists (naming the job) when the name
  // is taken; InvalidArgument when the name is empty.
  virtual Status create(const JobRecord& job) = 0;
  // NotFound when absent.
  virtual Result<JobRecord> get(const std::string& name) = 0;
  // Every job, oldest first (by createdMs, then by creation order).
  virtual Result<std::vector<JobRecord>> list() = 0;
  // Replaces the status fields (phase, conditions, createdMs/startMs/completionMs, generation,
  // restarts, progress, workers) of the job named job.name. The spec, name, uid and worker
  // token never change. NotFound when absent; FailedPrecondition when job.uid differs from
  // the stored uid (the job was removed and created again since `job` was read).
  virtual Status update(const JobRecord& job) = 0;
  // Replaces the stored spec of a job (a scale changes spec.workers.count: Note [Elastic
  // membership]); durable when it returns. NotFound when absent.
  virtual Status updateSpec(const std::string& name, const std::string& specYaml) = 0;
  // Removes the job, its events and its checkpoints. NotFound when absent.
  virtual Status remove(const std::string& name) = 0;

  // Appends an event; only the newest kMaxEventsPerJob are kept. NotFound when no such job.
  virtual Status appendEvent(const std::string& name, const JobEvent& event) = 0;
  // The job's events, oldest first. NotFound when no such job.
  virtual Result<std::vector<JobEvent>> events(const std::string& name) = 0;

  // Records a checkpoint; a second record for the same step replaces the first. NotFound when
  // no such job.
  virtual Status addCheckpoint(const std::string& name, const CheckpointRecord& checkpoint) = 0;
  // The job's checkpoints by ascending step. NotFound when no such job.
  virtual Result<std::vector<CheckpointRecord>> checkpoints(const std::string& name) = 0;
  // Keeps only the records whose step is in `steps` (the catalog follows what is on disk after
  // retention: Note [Two-phase checkpoint commit]); a step in `steps` with no record adds none.
  // NotFound when no such job.
  virtual Status retainCheckpoints(const std::string& name, const std::vector<int64_t>& steps) = 0;

  // Stores the flight records of one hang verdict (an opaque JSON document: the codec is
  // controller/jobs/hang/flight_records.h's); a second document for the same job and time replaces
  // the first (answers arrive after the verdict). Only the newest kMaxFlightRecordsPerJob are
  // kept. NotFound when no such job.
  virtual Status putFlightRecord(const std::string& name, int64_t timeMs, const std::string& recordJson) = 0;
  // The job's flight record documents, oldest verdict first. NotFound when no such job.
  virtual Result<std::vector<std::string>> flightRecords(const std::string& name) = 0;
};

}  // namespace ddp::controller
