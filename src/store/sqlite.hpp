// A thin C++ layer over the SQLite3 C API: one check helper, move-only handles
// that close themselves, and a transaction guard. Knows nothing about timeroof's
// schema; results_store.cpp is the only user.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/error.hpp"

namespace timeroof::sqlite {

// A failed SQLite call. sqlite_code() is the primary result code (SQLITE_BUSY, ...),
// so a caller can tell "not a database" from "locked" without parsing the message.
class SqliteError : public Error {
 public:
  // `detail`: SQLite's words and the fix, without the file (what() has both).
  SqliteError(ExitCode exit_code, int sqlite_code, const std::string& message,
              std::string detail = {})
      : Error(exit_code, message), sqlite_code_(sqlite_code), detail_(std::move(detail)) {}
  int sqlite_code() const noexcept { return sqlite_code_; }
  const std::string& detail() const noexcept { return detail_; }

 private:
  int sqlite_code_;
  std::string detail_;
};

// Returns rc when it is SQLITE_OK, SQLITE_ROW or SQLITE_DONE; otherwise throws a
// SqliteError with the database file, SQLite's own message and what to do: exit
// code 1 where the file is the user's to fix (damaged, changed by another program,
// read-only), 2 for the machine (busy, disk full, I/O), and an "internal error"
// naming the call, file and line for a misuse of the API.
int check(sqlite3* db, int rc, const char* call, const char* file, int line);
// Destructor variant: reports a failure on stderr and never throws.
void check_noexcept(sqlite3* db, int rc, const char* call, const char* file, int line) noexcept;

#define TR_SQLITE_CHECK(db, call) ::timeroof::sqlite::check((db), (call), #call, __FILE__, __LINE__)
#define TR_SQLITE_CHECK_NOEXCEPT(db, call) \
  ::timeroof::sqlite::check_noexcept((db), (call), #call, __FILE__, __LINE__)

class Statement;

class Database {
 public:
  // flags are sqlite3_open_v2's (SQLITE_OPEN_READONLY, SQLITE_OPEN_READWRITE | ..._CREATE).
  // `uri`: what SQLite opens instead of `path` ("file:...?immutable=1", with
  // SQLITE_OPEN_URI); path() stays the file's path, as messages name it.
  static Database open(const std::string& path, int flags, const std::string& uri = {});

  Database() = default;
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  sqlite3* get() const noexcept { return db_; }
  const std::string& path() const noexcept { return path_; }

  // Runs one or more statements that return no rows of interest (DDL, pragmas).
  void exec(const std::string& sql);
  Statement prepare(std::string_view sql);
  std::int64_t last_insert_rowid() const noexcept;
  int changes() const noexcept;

 private:
  void close() noexcept;

  sqlite3* db_ = nullptr;
  std::string path_;
};

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) noexcept : db_(db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Parameters are numbered from 1, as in SQLite.
  Statement& bind_int64(int index, std::int64_t value);
  Statement& bind_double(int index, double value);
  Statement& bind_text(int index, std::string_view value);
  Statement& bind_null(int index);

  // Dispatches on the type: integers, floating point, strings, std::optional of
  // those (empty binds NULL).
  template <typename T>
  Statement& bind(int index, const T& value) {
    if constexpr (is_optional<T>::value) {
      return value ? bind(index, *value) : bind_null(index);
    } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
      return bind_int64(index, static_cast<std::int64_t>(value));
    } else if constexpr (std::is_floating_point_v<T>) {
      return bind_double(index, static_cast<double>(value));
    } else {
      return bind_text(index, std::string_view(value));
    }
  }

  // true: a row is ready for the column getters; false: the statement is done.
  bool step();
  // Steps a statement that returns no rows (INSERT, UPDATE, DELETE).
  void run();
  // Makes the statement reusable with new bindings.
  void reset();

  // Columns are numbered from 0, as in SQLite. Each getter requires its type (an
  // int also its range) and throws a SqliteError (SQLITE_MISMATCH) naming the
  // column otherwise: a hand-edited file is refused, never read as 0 or cut short.
  bool column_is_null(int index) const;
  std::int64_t column_int64(int index) const;
  int column_int(int index) const;
  double column_double(int index) const;
  std::string column_text(int index) const;
  std::optional<double> column_optional_double(int index) const;

 private:
  template <typename T>
  struct is_optional : std::false_type {};
  template <typename T>
  struct is_optional<std::optional<T>> : std::true_type {};

  void finalize() noexcept;
  void require_type(int index, bool ok, const char* wanted) const;

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN ... COMMIT; rolls back in the destructor unless commit() ran, so an
// exception between the two leaves the database as it was.
class Transaction {
 public:
  // immediate takes the write lock up front: a writer never fails half-way with
  // SQLITE_BUSY after it has read. deferred suits read-only snapshots.
  enum class Mode { deferred, immediate };

  explicit Transaction(Database& db, Mode mode = Mode::immediate);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  void commit();

 private:
  Database& db_;
  bool open_ = false;
};

}  // namespace timeroof::sqlite
