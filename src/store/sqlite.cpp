#include "src/store/sqlite.hpp"

#include <climits>
#include <cstdio>
#include <utility>

namespace timeroof::sqlite {

namespace {

// What SQLite says went wrong: the connection's detailed message where it has
// one for this code, and the generic text of the code.
std::string describe(sqlite3* db, int rc) {
  std::string generic = sqlite3_errstr(rc);
  if (db == nullptr || sqlite3_errcode(db) != rc) return generic;
  std::string detailed = sqlite3_errmsg(db);
  return detailed == generic ? detailed : detailed + " (" + generic + ")";
}

std::string database_name(sqlite3* db) {
  if (db == nullptr) return "";
  const char* name = sqlite3_db_filename(db, "main");
  return name == nullptr ? "" : name;
}

bool is_success(int rc) {
  return rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE;
}

// What a failed call means to the user: a file they can replace or fix (exit 1,
// with the fix), the machine (exit 2), or a bug in the caller (exit 2, with the
// call, since only a developer can act on it).
struct Meaning {
  ExitCode exit_code;
  const char* fix;  // nullptr: a bug
};

Meaning meaning_of(int primary) {
  switch (primary) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_ERROR:     // SQL that fits no table: the schema was changed by hand
    case SQLITE_MISMATCH:  // a value of the wrong type in a column
    case SQLITE_TOOBIG:
    case SQLITE_SCHEMA:
      return {ExitCode::usage,
              "the file is damaged or was changed by another program; use another database file"};
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return {ExitCode::usage,
              "make the file and its directory writable, or use another database file"};
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return {ExitCode::environment,
              "another process holds the database; try again when it is done"};
    case SQLITE_FULL:
      return {ExitCode::environment, "the disk is full; free some space"};
    case SQLITE_IOERR:
    case SQLITE_NOMEM:
    case SQLITE_NOLFS:
    case SQLITE_PROTOCOL:
      return {ExitCode::environment, "check the disk and the file system"};
    default:  // SQLITE_MISUSE, SQLITE_RANGE, SQLITE_INTERNAL, ...: the caller's mistake
      return {ExitCode::environment, nullptr};
  }
}

}  // namespace

int check(sqlite3* db, int rc, const char* call, const char* file, int line) {
  if (is_success(rc)) return rc;
  const int primary = rc & 0xff;
  const Meaning meaning = meaning_of(primary);
  const std::string name = database_name(db);
  std::string detail = describe(db, rc);
  if (meaning.fix)
    detail += "; " + std::string(meaning.fix);
  else
    detail += " [" + std::string(call) + " at " + file + ":" + std::to_string(line) + "]";
  const std::string message = (meaning.fix ? "" : "internal error: ") +
                              (name.empty() ? std::string("SQLite") : name) + ": " + detail;
  throw SqliteError(meaning.exit_code, primary, message, detail);
}

void check_noexcept(sqlite3* db, int rc, const char* call, const char* file, int line) noexcept {
  if (is_success(rc)) return;
  std::fprintf(stderr, "timeroof: warning: sqlite: %s [%s at %s:%d]\n", describe(db, rc).c_str(),
               call, file, line);
}

// ---- Database ----

Database Database::open(const std::string& path, int flags, const std::string& uri) {
  Database database;
  database.path_ = path;
  const int rc = sqlite3_open_v2((uri.empty() ? path : uri).c_str(), &database.db_, flags, nullptr);
  // sqlite3_open_v2 hands out a handle even on failure; the destructor closes it.
  // (Not the macro: the handle must be read after the call has set it.)
  check(database.db_, rc, "sqlite3_open_v2(path, flags)", __FILE__, __LINE__);
  TR_SQLITE_CHECK(database.db_, sqlite3_extended_result_codes(database.db_, 1));
  return database;
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    close();
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Database::~Database() {
  close();
}

void Database::close() noexcept {
  // close_v2 defers the close until every statement is finalized instead of failing.
  if (db_ != nullptr) TR_SQLITE_CHECK_NOEXCEPT(db_, sqlite3_close_v2(db_));
  db_ = nullptr;
}

void Database::exec(const std::string& sql) {
  TR_SQLITE_CHECK(db_, sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr));
}

Statement Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  TR_SQLITE_CHECK(
      db_, sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr));
  return Statement(db_, stmt);
}

std::int64_t Database::last_insert_rowid() const noexcept {
  return sqlite3_last_insert_rowid(db_);
}

int Database::changes() const noexcept {
  return sqlite3_changes(db_);
}

// ---- Statement ----

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    finalize();
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Statement::~Statement() {
  finalize();
}

void Statement::finalize() noexcept {
  // sqlite3_finalize repeats the last step's error, already reported; nothing to check.
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
  stmt_ = nullptr;
}

Statement& Statement::bind_int64(int index, std::int64_t value) {
  TR_SQLITE_CHECK(db_, sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Statement& Statement::bind_double(int index, double value) {
  TR_SQLITE_CHECK(db_, sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Statement& Statement::bind_text(int index, std::string_view value) {
  TR_SQLITE_CHECK(db_, sqlite3_bind_text64(stmt_, index, value.data(), value.size(),
                                           SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Statement& Statement::bind_null(int index) {
  TR_SQLITE_CHECK(db_, sqlite3_bind_null(stmt_, index));
  return *this;
}

bool Statement::step() {
  return TR_SQLITE_CHECK(db_, sqlite3_step(stmt_)) == SQLITE_ROW;
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  TR_SQLITE_CHECK(db_, sqlite3_reset(stmt_));
  TR_SQLITE_CHECK(db_, sqlite3_clear_bindings(stmt_));
}

bool Statement::column_is_null(int index) const {
  return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

void Statement::require_type(int index, bool ok, const char* wanted) const {
  if (ok) return;
  static const char* const kTypes[] = {"", "an integer", "a number", "text", "a blob", "null"};
  const int type = sqlite3_column_type(stmt_, index);
  const char* name = sqlite3_column_name(stmt_, index);
  const char* db_name = sqlite3_db_filename(db_, "main");
  const std::string detail = std::string("column ") + (name ? name : "?") + " holds " +
                             kTypes[type >= 1 && type <= 5 ? type : 0] + ", not " + wanted + "; " +
                             meaning_of(SQLITE_MISMATCH).fix;
  throw SqliteError(meaning_of(SQLITE_MISMATCH).exit_code, SQLITE_MISMATCH,
                    std::string(db_name && *db_name ? db_name : "SQLite") + ": " + detail, detail);
}

std::int64_t Statement::column_int64(int index) const {
  require_type(index, sqlite3_column_type(stmt_, index) == SQLITE_INTEGER, "an integer");
  return sqlite3_column_int64(stmt_, index);
}

int Statement::column_int(int index) const {
  const std::int64_t value = column_int64(index);
  require_type(index, value >= INT_MIN && value <= INT_MAX, "an integer that fits an int");
  return static_cast<int>(value);
}

double Statement::column_double(int index) const {
  const int type = sqlite3_column_type(stmt_, index);
  require_type(index, type == SQLITE_FLOAT || type == SQLITE_INTEGER, "a number");
  return sqlite3_column_double(stmt_, index);
}

std::string Statement::column_text(int index) const {
  require_type(index, sqlite3_column_type(stmt_, index) == SQLITE_TEXT, "text");
  // Text first, then the byte count: the order SQLite documents as safe.
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
  if (text == nullptr) return {};
  return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, index)));
}

std::optional<double> Statement::column_optional_double(int index) const {
  if (column_is_null(index)) return std::nullopt;
  return column_double(index);
}

// ---- Transaction ----

Transaction::Transaction(Database& db, Mode mode) : db_(db) {
  db_.exec(mode == Mode::immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
  open_ = true;
}

Transaction::~Transaction() {
  if (open_)
    TR_SQLITE_CHECK_NOEXCEPT(db_.get(),
                             sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr));
}

void Transaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

}  // namespace timeroof::sqlite
