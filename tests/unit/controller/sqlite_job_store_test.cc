// SqliteJobStore beyond the JobStore contract: the file (mode, reopen, corruption, schema
// version), locking between connections, and durability across SIGKILL.

#include "controller/store/sqlite_job_store.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/unit/controller/job_store_test_util.h"

namespace ddp::controller {
namespace {

using testing::fullJob;
using testing::TempDir;

std::unique_ptr<SqliteJobStore> openOrDie(const std::string& path,
                                          const SqliteJobStoreConfig& config = {}) {
  Result<std::unique_ptr<SqliteJobStore>> opened = SqliteJobStore::open(path, config);
  EXPECT_TRUE(opened.isOk()) << opened.status();
  return opened.isOk() ? std::move(opened).value() : nullptr;
}

// Runs SQL on its own raw connection (to tamper with a file or check it independently).
std::string rawQuery(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string out;
  auto collect = [](void* arg, int n, char** values, char**) {
    auto* text = static_cast<std::string*>(arg);
    for (int i = 0; i < n; ++i) *text += (values[i] != nullptr ? values[i] : "NULL") + std::string(";");
    return 0;
  };
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), collect, &out, &error), SQLITE_OK)
      << sql << ": " << (error != nullptr ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
  return out;
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int fileMode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<int>(st.st_mode & 07777);
}

TEST(SqliteJobStoreTest, ReopenKeepsEverything) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  std::vector<JobRecord> jobs;
  {
    auto store = openOrDie(path);
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 3; ++i) {
      jobs.push_back(fullJob("job" + std::to_string(i), i));
      ASSERT_TRUE(store->create(jobs.back()).isOk());
      ASSERT_TRUE(store->appendEvent(jobs.back().name, JobEvent{i, kEventWarning, "R", "m"}).isOk());
      ASSERT_TRUE(store->addCheckpoint(jobs.back().name, CheckpointRecord{i, 1, 2, 3, "p"}).isOk());
    }
    jobs[1].phase = JobPhase::kFailed;
    jobs[1].progress.testAccuracy.reset();
    ASSERT_TRUE(store->update(jobs[1]).isOk());
    ASSERT_TRUE(store->remove("job2").isOk());
    jobs.pop_back();
  }
  auto store = openOrDie(path);
  ASSERT_NE(store, nullptr);
  Result<std::vector<JobRecord>> list = store->list();
  ASSERT_TRUE(list.isOk()) << list.status();
  EXPECT_EQ(*list, jobs);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(*store->events(jobs[i].name), (std::vector<JobEvent>{{i, kEventWarning, "R", "m"}}));
    EXPECT_EQ(*store->checkpoints(jobs[i].name), (std::vector<CheckpointRecord>{{i, 1, 2, 3, "p"}}));
  }
  EXPECT_EQ(store->get("job2").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store->checkIntegrity().isOk());
  // The file says what it is.
  EXPECT_EQ(rawQuery(path, "PRAGMA user_version"), std::to_string(SqliteJobStore::kSchemaVersion) + ";");
  EXPECT_EQ(rawQuery(path, "PRAGMA journal_mode"), "wal;");
}

TEST(SqliteJobStoreTest, NewFileIsPrivateWhateverTheUmask) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  mode_t old = ::umask(0277);  // would give 0400
  auto store = openOrDie(path);
  ::umask(old);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(fileMode(path), 0600);
  ASSERT_TRUE(store->create(fullJob("j")).isOk());
  // SQLite gives the WAL and shared-memory files the database's mode.
  EXPECT_EQ(fileMode(path + "-wal"), 0600);
  EXPECT_EQ(fileMode(path + "-shm"), 0600);
}

TEST(SqliteJobStoreTest, ExistingFileOpenToOthersIsRestricted) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  ASSERT_NE(openOrDie(path), nullptr);
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto store = openOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(fileMode(path), 0600);
}

TEST(SqliteJobStoreTest, EmptyFileBecomesAStore) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  std::ofstream(path).close();
  auto store = openOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->create(fullJob("j")).isOk());
}

TEST(SqliteJobStoreTest, GarbageFileIsDataLossNamingThePathAndIsLeftAlone) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  std::string garbage;
  for (int i = 0; i < 200; ++i) garbage += "this is not a database " + std::to_string(i) + "\n";
  std::ofstream(path, std::ios::binary) << garbage;
  Result<std::unique_ptr<SqliteJobStore>> opened = SqliteJobStore::open(path);
  ASSERT_FALSE(opened.isOk());
  EXPECT_EQ(opened.status().code(), StatusCode::kDataLoss) << opened.status();
  EXPECT_NE(opened.status().message().find(path), std::string::npos) << opened.status();
  EXPECT_EQ(readAll(path), garbage);
}

TEST(SqliteJobStoreTest, CorruptDatabaseIsDataLoss) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  {
    auto store = openOrDie(path);
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 40; ++i) {
      JobRecord job = fullJob("job" + std::to_string(i), i);
      job.specYaml += std::string(3000, 'x');  // spread the table over many pages
      ASSERT_TRUE(store->create(job).isOk());
    }
  }  // closing checkpoints the WAL into the file
  std::string bytes = readAll(path);
  ASSERT_GT(bytes.size(), 20u * 4096);
  // Page 1 (header and schema) stays; pages 2.. are overwritten.
  for (size_t i = 4096; i < bytes.size(); ++i) bytes[i] = static_cast<char>(0xA5 ^ (i * 131));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  Result<std::unique_ptr<SqliteJobStore>> opened = SqliteJobStore::open(path);
  ASSERT_FALSE(opened.isOk());
  EXPECT_EQ(opened.status().code(), StatusCode::kDataLoss) << opened.status();
  EXPECT_NE(opened.status().message().find(path), std::string::npos) << opened.status();
}

TEST(SqliteJobStoreTest, NewerOrUnknownSchemaVersionIsRejected) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  ASSERT_NE(openOrDie(path), nullptr);
  rawQuery(path, "PRAGMA user_version = 7");
  Result<std::unique_ptr<SqliteJobStore>> opened = SqliteJobStore::open(path);
  ASSERT_FALSE(opened.isOk());
  EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition) << opened.status();
  EXPECT_NE(opened.status().message().find("schema version 7, newer"), std::string::npos)
      << opened.status();

  rawQuery(path, "PRAGMA user_version = 0");
  opened = SqliteJobStore::open(path);
  ASSERT_FALSE(opened.isOk());
  EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition) << opened.status();
  EXPECT_NE(opened.status().message().find("unknown schema version 0"), std::string::npos)
      << opened.status();
}

// Schema version 1 (before flight_records) is migrated in place: its jobs stay, the table is
// added, the version becomes the current one.
TEST(SqliteJobStoreTest, AVersionOneFileIsMigratedKeepingItsJobs) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  {
    auto store = openOrDie(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->create(fullJob("old")).isOk());
  }
  rawQuery(path, "DROP TABLE flight_records; PRAGMA user_version = 1");  // what version 1 wrote
  auto store = openOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(rawQuery(path, "PRAGMA user_version"), std::to_string(SqliteJobStore::kSchemaVersion) + ";");
  auto old = store->get("old");
  ASSERT_TRUE(old.isOk()) << old.status();
  EXPECT_EQ(*old, fullJob("old"));
  ASSERT_TRUE(store->putFlightRecord("old", 5, "{\"a\":1}").isOk());
  auto docs = store->flightRecords("old");
  ASSERT_TRUE(docs.isOk());
  EXPECT_EQ(*docs, std::vector<std::string>{"{\"a\":1}"});
}

// A record written before the language-model figures existed (its progress JSON exactly as that
// version wrote it) loads, with none of them; writing it again keeps it readable.
TEST(SqliteJobStoreTest, AnOlderRecordWithoutLanguageModelFiguresLoads) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  {
    auto store = openOrDie(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->create(fullJob("old")).isOk());
  }
  rawQuery(path,
           "UPDATE jobs SET progress_json = '{\"epoch\":1,\"epochs\":5,\"etaSeconds\":93.25,"
           "\"loss\":0.5,\"samplesPerSecond\":4321.5,\"step\":120,\"testAccuracy\":0.875,"
           "\"totalSteps\":1000}' WHERE name = 'old'");
  auto store = openOrDie(path);
  ASSERT_NE(store, nullptr);
  auto old = store->get("old");
  ASSERT_TRUE(old.isOk()) << old.status();
  EXPECT_EQ(old->progress.step, 120);
  EXPECT_EQ(old->progress.testAccuracy, 0.875);
  EXPECT_FALSE(old->progress.valLoss.has_value());
  EXPECT_FALSE(old->progress.perplexity().has_value());
  EXPECT_FALSE(old->progress.tokensPerSecond.has_value());
  EXPECT_FALSE(old->progress.mfu.has_value());
  ASSERT_TRUE(store->update(*old).isOk());
  EXPECT_EQ(rawQuery(path, "SELECT progress_json LIKE '%valLoss%' FROM jobs WHERE name = 'old'"), "0;")
      << "no key for a figure the job never had";
  EXPECT_EQ(*store->get("old"), *old);
}

// Flight record documents: replaced by verdict time, the newest kMaxFlightRecordsPerJob kept,
// oldest first, gone with their job, NotFound for an unknown job; durable across a reopen.
TEST(SqliteJobStoreTest, FlightRecordsAreKeptPerVerdictAndGoWithTheirJob) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  auto store = openOrDie(path);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create(fullJob("j")).isOk());
  EXPECT_EQ(store->putFlightRecord("nope", 1, "{}").code(), StatusCode::kNotFound);
  EXPECT_EQ(store->flightRecords("nope").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->putFlightRecord("j", 100, "asked").isOk());
  ASSERT_TRUE(store->putFlightRecord("j", 100, "answered").isOk());  // the same verdict, later
  auto docs = store->flightRecords("j");
  ASSERT_TRUE(docs.isOk());
  EXPECT_EQ(*docs, std::vector<std::string>{"answered"});
  for (int t = 1; t <= kMaxFlightRecordsPerJob + 2; ++t) {
    ASSERT_TRUE(store->putFlightRecord("j", 100 + t, "v" + std::to_string(t)).isOk());
  }
  store.reset();
  store = openOrDie(path);
  docs = store->flightRecords("j");
  ASSERT_TRUE(docs.isOk());
  ASSERT_EQ(docs->size(), static_cast<size_t>(kMaxFlightRecordsPerJob));
  EXPECT_EQ(docs->front(), "v3");
  EXPECT_EQ(docs->back(), "v" + std::to_string(kMaxFlightRecordsPerJob + 2));
  ASSERT_TRUE(store->remove("j").isOk());
  ASSERT_TRUE(store->create(fullJob("j")).isOk());  // the same name again: nothing inherited
  docs = store->flightRecords("j");
  ASSERT_TRUE(docs.isOk());
  EXPECT_TRUE(docs->empty());
  EXPECT_EQ(rawQuery(path, "SELECT count(*) FROM flight_records"), "0;");
}

TEST(SqliteJobStoreTest, AnotherApplicationsDatabaseIsRejected) {
  TempDir dir;
  std::string path = dir.file("other.db");
  rawQuery(path, "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')");
  Result<std::unique_ptr<SqliteJobStore>> opened = SqliteJobStore::open(path);
  ASSERT_FALSE(opened.isOk());
  EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition) << opened.status();
  EXPECT_NE(opened.status().message().find("not a job store"), std::string::npos);
  EXPECT_EQ(rawQuery(path, "SELECT body FROM notes"), "keep me;");
}

TEST(SqliteJobStoreTest, BadLocationsAndConfig) {
  TempDir dir;
  Result<std::unique_ptr<SqliteJobStore>> opened = SqliteJobStore::open(dir.file("no/such/dir.db"));
  EXPECT_EQ(opened.status().code(), StatusCode::kUnavailable) << opened.status();
  EXPECT_NE(opened.status().message().find("no/such/dir.db"), std::string::npos);
  EXPECT_EQ(SqliteJobStore::open(dir.path()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SqliteJobStore::open("").status().code(), StatusCode::kInvalidArgument);
  SqliteJobStoreConfig config;
  EXPECT_TRUE(config.validate().isOk());
  config.busyTimeout = std::chrono::milliseconds(0);
  EXPECT_EQ(SqliteJobStore::open(dir.file("a.db"), config).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(SqliteJobStoreTest, WriterLockedOutLongerThanBusyTimeoutTimesOut) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  SqliteJobStoreConfig config;
  config.busyTimeout = std::chrono::milliseconds(200);
  auto store = openOrDie(path, config);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create(fullJob("a")).isOk());

  sqlite3* other = nullptr;  // another "process" holding the write lock
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto start = std::chrono::steady_clock::now();
  Status st = store->create(fullJob("b"));
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(st.code(), StatusCode::kTimeout) << st;
  EXPECT_NE(st.message().find(path), std::string::npos) << st;
  EXPECT_GE(waited, std::chrono::milliseconds(150));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_TRUE(store->get("a").isOk());  // readers are not blocked (WAL)
  ASSERT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  EXPECT_TRUE(store->create(fullJob("b")).isOk());
}

TEST(SqliteJobStoreTest, FourConnectionsOnOneFile) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  ASSERT_NE(openOrDie(path), nullptr);  // schema first, so the threads only open
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&path, t] {
      auto store = openOrDie(path);
      if (store == nullptr) return;
      for (int i = 0; i < 10; ++i) {
        std::string name = "c" + std::to_string(t) + "-" + std::to_string(i);
        JobRecord job = fullJob(name, i);
        EXPECT_TRUE(store->create(job).isOk());
        EXPECT_TRUE(store->appendEvent(name, JobEvent{i, kEventNormal, "R", name}).isOk());
        job.phase = JobPhase::kSucceeded;
        EXPECT_TRUE(store->update(job).isOk());
        EXPECT_TRUE(store->list().isOk());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  auto store = openOrDie(path);
  ASSERT_NE(store, nullptr);
  Result<std::vector<JobRecord>> all = store->list();
  ASSERT_TRUE(all.isOk()) << all.status();
  EXPECT_EQ(all->size(), 40u);
  for (const JobRecord& job : *all) {
    EXPECT_EQ(job.phase, JobPhase::kSucceeded);
    EXPECT_EQ(store->events(job.name)->size(), 1u);
  }
}

// ---- durability across SIGKILL ----

// What the child reports after each call that returned ok: kind 1 = job `job` created, kind 2 =
// event `event` of job `job` appended. One write() of 12 bytes: atomic on a pipe.
struct Committed {
  int32_t kind, job, event;
};

std::string crashJobName(int round, int job) {
  return "r" + std::to_string(round) + "-j" + std::to_string(job);
}

[[noreturn]] void runCrashChild(const std::string& path, int round, int reportFd) {
  Result<std::unique_ptr<SqliteJobStore>> opened = SqliteJobStore::open(path);
  if (!opened.isOk()) ::_exit(10);
  SqliteJobStore& store = **opened;
  auto report = [reportFd](Committed c) {
    if (::write(reportFd, &c, sizeof c) != static_cast<ssize_t>(sizeof c)) ::_exit(11);
  };
  for (int32_t i = 0; i < 1000000; ++i) {
    std::string name = crashJobName(round, i);
    if (!store.create(fullJob(name, i)).isOk()) ::_exit(12);
    report({1, i, 0});
    for (int32_t e = 0; e < 3; ++e) {
      if (!store.appendEvent(name, JobEvent{e, kEventNormal, "Step", std::to_string(e)}).isOk()) {
        ::_exit(13);
      }
      report({2, i, e});
    }
  }
  ::_exit(0);
}

// Forks a child that writes to the store, waits for `killAfter` reports, SIGKILLs it and
// returns every report it made (including those after the parent stopped waiting).
std::vector<Committed> runAndKill(const std::string& path, int round, int killAfter) {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    runCrashChild(path, round, fds[1]);
  }
  ::close(fds[1]);
  std::vector<Committed> reports;
  auto readOne = [&](int timeoutMs) {
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, timeoutMs) <= 0) return false;
    Committed c{};
    if (::read(fds[0], &c, sizeof c) != static_cast<ssize_t>(sizeof c)) return false;
    reports.push_back(c);
    return true;
  };
  while (static_cast<int>(reports.size()) < killAfter && readOne(30000)) {
  }
  EXPECT_EQ(static_cast<int>(reports.size()), killAfter) << "child stalled or failed";
  // Vary where the kill lands (inside a transaction, between them, in the fsync...).
  std::this_thread::sleep_for(std::chrono::microseconds(round * 150));
  EXPECT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "child exited early with status " << status;
  while (readOne(0)) {
  }
  ::close(fds[0]);
  return reports;
}

TEST(SqliteJobStoreCrashTest, CommittedWorkSurvivesSigkill) {
  TempDir dir;
  std::string path = dir.file("jobs.db");
  // Each round's child opens the file the previous round's child was killed on (recovery).
  const int kRounds = 8;
  std::map<std::string, int> eventsReported;  // job -> events reported committed
  size_t jobsReported = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (const Committed& c : runAndKill(path, round, 10 + 7 * round)) {
      std::string name = crashJobName(round, c.job);
      if (c.kind == 1) {
        eventsReported[name] = 0;
        ++jobsReported;
      } else {
        eventsReported[name] = c.event + 1;
      }
    }
  }
  EXPECT_EQ(rawQuery(path, "PRAGMA integrity_check"), "ok;");
  auto store = openOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->checkIntegrity().isOk());
  Result<std::vector<JobRecord>> all = store->list();
  ASSERT_TRUE(all.isOk()) << all.status();
  // At most one unreported job per round: committed, killed before it could report.
  EXPECT_GE(all->size(), jobsReported);
  EXPECT_LE(all->size(), jobsReported + kRounds);
  for (const auto& [name, events] : eventsReported) {
    Result<JobRecord> job = store->get(name);
    ASSERT_TRUE(job.isOk()) << name << ": " << job.status();
    EXPECT_EQ(job->name, name);
    EXPECT_EQ(job->workers.size(), 2u);
    Result<std::vector<JobEvent>> got = store->events(name);
    ASSERT_TRUE(got.isOk()) << got.status();
    ASSERT_GE(static_cast<int>(got->size()), events) << name;
    ASSERT_LE(got->size(), 3u);
    for (size_t e = 0; e < got->size(); ++e) EXPECT_EQ((*got)[e].message, std::to_string(e));
  }
}

}  // namespace
}  // namespace ddp::controller
