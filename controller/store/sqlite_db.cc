#include "controller/store/sqlite_db.h"

#include <utility>

namespace ddp::controller {

// ---- SqliteStatement ----

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_), bindError_(other.bindError_) {
  other.stmt_ = nullptr;
}

SqliteStatement::~SqliteStatement() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

SqliteStatement& SqliteStatement::bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bindError_ == SQLITE_OK) bindError_ = rc;
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, std::string_view text) {
  // SQLITE_TRANSIENT: SQLite copies the text, so temporaries are fine.
  int rc = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  if (rc != SQLITE_OK && bindError_ == SQLITE_OK) bindError_ = rc;
  return *this;
}

Result<bool> SqliteStatement::step() {
  if (bindError_ != SQLITE_OK) return db_->error(bindError_, "bind");
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->error(rc, sqlite3_sql(stmt_));
}

Status SqliteStatement::run() {
  while (true) {
    Result<bool> row = step();
    if (!row.isOk()) return row.status();
    if (!*row) return Status::ok();
  }
}

int64_t SqliteStatement::int64At(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string SqliteStatement::textAt(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  int bytes = sqlite3_column_bytes(stmt_, column);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text), bytes);
}

bool SqliteStatement::isNullAt(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

// ---- SqliteDb ----

Result<std::unique_ptr<SqliteDb>> SqliteDb::open(const std::string& path,
                                                 std::chrono::milliseconds busyTimeout) {
  sqlite3* raw = nullptr;
  // NOMUTEX: the caller serialises use of the connection (see the thread model).
  int rc = sqlite3_open_v2(path.c_str(), &raw,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string detail = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close_v2(raw);
    return mapError(rc, path, "open", detail, busyTimeout);
  }
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, path, busyTimeout));
  sqlite3_extended_result_codes(raw, 1);
  rc = sqlite3_busy_timeout(raw, static_cast<int>(busyTimeout.count()));
  if (rc != SQLITE_OK) return db->error(rc, "busy_timeout");
  return db;
}

SqliteDb::~SqliteDb() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  // close_v2 never fails for a valid handle; a WAL file is checkpointed and removed by the
  // last connection to close.
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Result<SqliteStatement> SqliteDb::prepare(std::string_view sql) {
  std::string key(sql);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, key.data(), static_cast<int>(key.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return error(rc, "prepare: " + key);
    it = cache_.emplace(std::move(key), stmt).first;
  }
  return SqliteStatement(this, it->second);
}

Status SqliteDb::exec(const char* sql) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return error(rc, sql);
  return Status::ok();
}

Result<std::string> SqliteDb::queryText(const char* sql) {
  DDP_ASSIGN_OR_RETURN(SqliteStatement stmt, prepare(sql));
  DDP_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return internalError("job store " + path_ + ": " + sql + ": no result");
  return stmt.textAt(0);
}

Result<int64_t> SqliteDb::queryInt(const char* sql) {
  DDP_ASSIGN_OR_RETURN(SqliteStatement stmt, prepare(sql));
  DDP_ASSIGN_OR_RETURN(bool row, stmt.step());
  if (!row) return internalError("job store " + path_ + ": " + sql + ": no result");
  return stmt.int64At(0);
}

int64_t SqliteDb::changes() const { return sqlite3_changes64(db_); }

Status SqliteDb::error(int rc, std::string_view what) const {
  return mapError(rc, path_, what, sqlite3_errmsg(db_), busyTimeout_);
}

Status SqliteDb::mapError(int rc, const std::string& path, std::string_view what,
                          const std::string& detail, std::chrono::milliseconds busyTimeout) {
  std::string message = "job store " + path + ": " + std::string(what) + ": " + detail;
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return dataLoss(message + " (not a SQLite database, or corrupt)");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return timeoutError(message + " (locked by another connection for more than " +
                          std::to_string(busyTimeout.count()) + " ms)");
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_PROTOCOL:
      return unavailable(message);
    case SQLITE_TOOBIG:
      return invalidArgument(message);
    default:
      return internalError(message);
  }
}

// ---- SqliteTransaction ----

Result<SqliteTransaction> SqliteTransaction::begin(SqliteDb& db, Kind kind) {
  DDP_RETURN_IF_ERROR(db.exec(kind == Kind::kWrite ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED"));
  return SqliteTransaction(&db);
}

SqliteTransaction::~SqliteTransaction() {
  if (db_ != nullptr && !sqlite3_get_autocommit(db_->handle())) {
    // Best effort: a failed ROLLBACK leaves nothing to do (SQLite rolls back on close/reopen).
    sqlite3_exec(db_->handle(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

Status SqliteTransaction::commit() {
  Status st = db_->exec("COMMIT");
  // On failure the destructor rolls back (a failed COMMIT may leave the transaction open).
  if (st.isOk()) db_ = nullptr;
  return st;
}

}  // namespace ddp::controller
