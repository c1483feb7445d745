#pragma once
// A thin RAII layer over the SQLite C API, for SqliteJobStore: one connection with a cache of
// prepared statements, statements that bind parameters (never SQL built from data), explicit
// transactions that roll back unless committed, and SQLite result codes mapped to Status.
//
// Error mapping (every message names the database file):
//   SQLITE_CORRUPT, SQLITE_NOTADB                      -> DataLoss
//   SQLITE_BUSY, SQLITE_LOCKED (busy timeout passed)   -> Timeout
//   SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN,
//   SQLITE_READONLY, SQLITE_PERM, SQLITE_PROTOCOL      -> Unavailable
//   SQLITE_TOOBIG                                      -> InvalidArgument
//   anything else                                      -> Internal
//
// Thread model: not thread-safe. A SqliteDb and every SqliteStatement/SqliteTransaction made
// from it are used by one thread at a time (SqliteJobStore serialises them with its mutex).

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/status.h"

namespace ddp::controller {

class SqliteDb;

// A cached prepared statement, borrowed for one use: the destructor resets it and clears its
// bindings (so it holds no read snapshot open). Move-only. The same SQL must not be borrowed
// twice at once (both would share one sqlite3_stmt).
class SqliteStatement {
 public:
  SqliteStatement(SqliteDb* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&&) = delete;
  SqliteStatement(const SqliteStatement&) = delete;
  ~SqliteStatement();

  // Parameters are 1-based, as in SQL (?1, ?2, ...). A failed bind is reported by step().
  SqliteStatement& bind(int index, int64_t value);
  SqliteStatement& bind(int index, std::string_view text);
  SqliteStatement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
  SqliteStatement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }

  // true: a row is ready (read it with the column getters); false: done.
  Result<bool> step();
  // Steps to completion (for statements that return no rows).
  Status run();

  int64_t int64At(int column) const;
  std::string textAt(int column) const;
  bool isNullAt(int column) const;

 private:
  SqliteDb* db_;
  sqlite3_stmt* stmt_;
  int bindError_ = SQLITE_OK;
};

class SqliteDb {
 public:
  // Opens (creating when absent) the database file at `path` with SQLite's default unix VFS.
  // Sets extended result codes and the busy timeout; nothing else (the caller sets pragmas).
  static Result<std::unique_ptr<SqliteDb>> open(const std::string& path,
                                                std::chrono::milliseconds busyTimeout);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  const std::string& path() const { return path_; }
  sqlite3* handle() { return db_; }

  // The statement for `sql`, prepared on first use and cached (keyed by the SQL text).
  Result<SqliteStatement> prepare(std::string_view sql);
  // Runs SQL without parameters (schema, BEGIN/COMMIT, pragmas). Never for data.
  Status exec(const char* sql);
  // Runs a statement that returns one text value (pragmas such as journal_mode).
  Result<std::string> queryText(const char* sql);
  Result<int64_t> queryInt(const char* sql);
  // Rows changed by the last INSERT/UPDATE/DELETE (not counting cascades).
  int64_t changes() const;

  // `rc` as a Status (see the mapping above): "job store <path>: <what>: <sqlite message>".
  Status error(int rc, std::string_view what) const;

 private:
  SqliteDb(sqlite3* db, std::string path, std::chrono::milliseconds busyTimeout)
      : db_(db), path_(std::move(path)), busyTimeout_(busyTimeout) {}
  static Status mapError(int rc, const std::string& path, std::string_view what,
                         const std::string& detail, std::chrono::milliseconds busyTimeout);

  sqlite3* db_;
  std::string path_;
  std::chrono::milliseconds busyTimeout_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

// BEGIN (read: DEFERRED; write: IMMEDIATE, so a writer waits for the write lock up front and
// never fails half-way with SQLITE_BUSY on lock upgrade). The destructor rolls back unless
// commit() succeeded.
class SqliteTransaction {
 public:
  enum class Kind { kRead, kWrite };
  static Result<SqliteTransaction> begin(SqliteDb& db, Kind kind);
  SqliteTransaction(SqliteTransaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  SqliteTransaction& operator=(SqliteTransaction&&) = delete;
  ~SqliteTransaction();

  Status commit();

 private:
  explicit SqliteTransaction(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;  // null once committed or rolled back
};

}  // namespace ddp::controller
