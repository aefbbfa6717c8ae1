#include "src/store/results_store.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <unistd.h>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/json_io.hpp"
#include "core/vocabulary.hpp"
#include "src/store/trace_table.hpp"

namespace timeroof {

using nlohmann::json;
using sqlite::Database;
using sqlite::Statement;
using sqlite::Transaction;

namespace {

// Tables of schema 3, and trace_events of schema 4 (src/store/trace_table.hpp). The JSON columns
// hold the to_json form of core/json_io.hpp.
constexpr const char* kSchemaSql = R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  uuid TEXT UNIQUE NOT NULL,
  tool_version TEXT NOT NULL,
  git_sha TEXT NOT NULL,
  command_line TEXT NOT NULL,
  host TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT NOT NULL,
  status TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  gpu_json TEXT NOT NULL,
  writer_json TEXT
);
CREATE TABLE ceilings (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  unit TEXT NOT NULL,
  measured REAL NOT NULL,
  theoretical REAL,
  theoretical_source TEXT NOT NULL,
  method TEXT NOT NULL,
  repeats INTEGER NOT NULL,
  spread REAL NOT NULL,
  sm_clock_hz REAL,
  mem_clock_hz REAL,
  power_json TEXT NOT NULL DEFAULT '{}',
  sustained_json TEXT,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE working_set (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  bytes REAL NOT NULL,
  bytes_per_second REAL NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE skipped_ceilings (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  name TEXT NOT NULL,
  reason TEXT NOT NULL,
  failed INTEGER NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE points (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  sweep TEXT NOT NULL,
  seq INTEGER NOT NULL,
  op TEXT NOT NULL,
  params_json TEXT NOT NULL,
  precision TEXT NOT NULL,
  math_mode TEXT NOT NULL,
  algorithm TEXT NOT NULL,
  flops REAL NOT NULL,
  min_bytes REAL NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL,
  timing_json TEXT NOT NULL,
  counters_json TEXT NOT NULL,
  details_json TEXT NOT NULL,
  UNIQUE (run_id, sweep, seq)
);
CREATE TABLE kernels (
  point_id INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  name TEXT NOT NULL,
  grid_x INTEGER NOT NULL,
  grid_y INTEGER NOT NULL,
  grid_z INTEGER NOT NULL,
  block_x INTEGER NOT NULL,
  block_y INTEGER NOT NULL,
  block_z INTEGER NOT NULL,
  duration_s REAL NOT NULL,
  metrics_json TEXT NOT NULL,
  PRIMARY KEY (point_id, seq)
);
)sql";

// ---- Validating a file before anything writes to it ----

enum class FileState {
  missing,       // no file: read_write creates it
  empty,         // 0 bytes: read_write gives it the schema
  blank_sqlite,  // SQLite with no tables and no application_id: same
  timeroof,      // our schema, readable by this build
};

struct StoreHeader {
  std::int64_t application_id = 0;
  std::int64_t user_version = 0;
  bool has_schema = false;  // any table, index, view or trigger
};

std::int64_t query_int(Database& db, const char* sql) {
  Statement statement = db.prepare(sql);
  return statement.step() ? statement.column_int64(0) : 0;
}

StoreHeader query_header(Database& db) {
  return StoreHeader{query_int(db, "PRAGMA application_id"), query_int(db, "PRAGMA user_version"),
                     query_int(db, "SELECT count(*) FROM sqlite_master") > 0};
}

Error not_a_store(const std::string& path, const std::string& detail) {
  return usage_error(path + ": not a timeroof results database (" + detail +
                     "); pass another --db PATH");
}

std::string hex(std::int64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%08llx",
                static_cast<unsigned long long>(static_cast<std::uint32_t>(value)));
  return text;
}

// Throws for anything this build must not read or write; otherwise says what is there.
FileState classify(const std::string& path, const StoreHeader& header) {
  if (header.application_id == kStoreApplicationId) {
    if (header.user_version > kStoreSchemaVersion) {
      throw usage_error(
          path + ": written by a newer timeroof (schema " + std::to_string(header.user_version) +
          " > " + std::to_string(kStoreSchemaVersion) + "); upgrade timeroof or use another --db");
    }
    if (header.user_version < kOldestStoreSchemaVersion) {
      throw usage_error(path + ": written by an older timeroof (schema " +
                        std::to_string(header.user_version) + " < " +
                        std::to_string(kOldestStoreSchemaVersion) +
                        ") that this build cannot read; use another --db");
    }
    return FileState::timeroof;
  }
  if (header.application_id != 0 || header.has_schema || header.user_version != 0) {
    throw usage_error(path + ": foreign SQLite file, not written by timeroof (application_id " +
                      hex(header.application_id) + (header.has_schema ? ", has tables" : "") +
                      "); pass another --db PATH");
  }
  return FileState::blank_sqlite;
}

// The database header and page 1 (https://www.sqlite.org/fileformat.html): enough
// to validate a file at rest without handing it to SQLite, which would leave
// -wal/-shm files beside a WAL-mode file it only read.
constexpr std::size_t kHeaderBytes = 108;

std::uint32_t big_endian(const unsigned char* bytes, int count) {
  std::uint32_t value = 0;
  for (int i = 0; i < count; ++i) value = (value << 8) | bytes[i];
  return value;
}

std::optional<StoreHeader> parse_header(const unsigned char* bytes, std::size_t size) {
  static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL
  if (size < kHeaderBytes || std::memcmp(bytes, kMagic, sizeof kMagic) != 0) return std::nullopt;
  const std::uint32_t page_size = big_endian(bytes + 16, 2);
  const bool page_size_ok = page_size == 1 || (page_size >= 512 && page_size <= 32768 &&
                                               (page_size & (page_size - 1)) == 0);
  // Payload fractions are fixed by the format; page 1 is a table b-tree page.
  const bool fixed_fields_ok = bytes[21] == 64 && bytes[22] == 32 && bytes[23] == 32;
  const unsigned char page_type = bytes[100];
  if (!page_size_ok || !fixed_fields_ok || (page_type != 0x0D && page_type != 0x05)) {
    return std::nullopt;
  }
  StoreHeader header;
  header.user_version = static_cast<std::int32_t>(big_endian(bytes + 60, 4));
  header.application_id = static_cast<std::int32_t>(big_endian(bytes + 68, 4));
  // An interior page or a leaf with cells: sqlite_master lists something.
  header.has_schema = page_type == 0x05 || big_endian(bytes + 103, 2) > 0;
  return header;
}

// Names the path when SQLite cannot even open it (missing directory, permissions).
// `target` is what SQLite opens (a "file:" URI), when not the path itself.
Database open_database(const std::string& path, int flags, const std::string& target = {}) {
  try {
    return Database::open(path, flags, target);
  } catch (const sqlite::SqliteError& e) {
    throw sqlite::SqliteError(e.code(), e.sqlite_code(), "cannot open " + path + ": " + e.detail(),
                              e.detail());
  }
}

// "file:" URI of a path, every byte outside the unreserved set and '/' escaped.
std::string file_uri(const std::string& path) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string uri = "file:";
  for (const unsigned char c : std::filesystem::absolute(path).string()) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 15];
    }
  }
  return uri;
}

// A connection that only reads a store a writer has (or had) open, -wal and
// -shm beside it, so SQLite must merge its WAL. It is read-write where the file
// allows it: the last connection to close removes the -wal and -shm, and if the
// writer leaves first that is this one, which read-only could not (CI saw them
// left behind by a reader that outlived a failed import).
Database open_beside_a_writer(const std::string& path) {
  return open_database(
      path, ::access(path.c_str(), W_OK) == 0 ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY);
}

// A read command's connection. With no -wal or -shm beside the store, no writer
// has it open (a WAL writer keeps both while connected, and the last one to
// close removes them): the file holds every committed page, and it is opened
// immutable, so SQLite creates no -wal / -shm beside it and needs no write access
// to the directory (a store in a read-only directory could not be read: issue
// 16). With them, open_beside_a_writer.
Database open_for_reading(const std::string& path) {
  std::error_code error;
  if (std::filesystem::exists(path + "-wal", error) ||
      std::filesystem::exists(path + "-shm", error))
    return open_beside_a_writer(path);
  return open_database(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                       file_uri(path) + "?immutable=1");
}

// Reads the file without writing to it or beside it.
FileState inspect(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status)) return FileState::missing;
  if (fs::is_directory(status)) {
    throw usage_error(path +
                      " is a directory, not a timeroof results database; pass a file to --db");
  }
  // A FIFO would block the read below forever, a device file be read or written
  // as a database: neither holds a store.
  if (!fs::is_regular_file(status)) {
    throw usage_error(path + " is not a regular file (a FIFO, socket or device); pass a file to " +
                      "--db");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw environment_error("cannot read " + path + ": " + std::strerror(errno));
  unsigned char bytes[kHeaderBytes] = {};
  in.read(reinterpret_cast<char*>(bytes), sizeof bytes);
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got == 0) return FileState::empty;
  const std::optional<StoreHeader> header = parse_header(bytes, got);
  if (!header) {
    const bool sqlite_magic = got >= 16 && std::memcmp(bytes, "SQLite format 3", 16) == 0;
    throw not_a_store(path, sqlite_magic ? "damaged SQLite header" : "not an SQLite file");
  }

  // With no WAL or rollback journal beside it the file holds every committed
  // page and its header is the truth; otherwise SQLite must merge them.
  if (!fs::exists(path + "-wal", error) && !fs::exists(path + "-journal", error)) {
    return classify(path, *header);
  }
  StoreHeader live_header;
  try {
    Database db = open_beside_a_writer(path);
    live_header = query_header(db);
  } catch (const sqlite::SqliteError& e) {
    if (e.sqlite_code() == SQLITE_NOTADB || e.sqlite_code() == SQLITE_CORRUPT) {
      throw not_a_store(path, std::string("SQLite: ") + sqlite3_errstr(e.sqlite_code()));
    }
    throw;
  }
  return classify(path, live_header);
}

void configure_connection(Database& db, bool writable) {
  // Wait for another timeroof process (a report while a sweep writes) instead of failing.
  TR_SQLITE_CHECK(db.get(), sqlite3_busy_timeout(db.get(), 10000));
  if (!writable) return;
  db.exec("PRAGMA foreign_keys = ON");
  // FULL: a commit survives power loss too. WAL (readers never block the
  // writer) is set after the first commit (ResultsStore::committed): switching a
  // rollback-journal store to it rewrites the header, which a write that then
  // fails must not leave behind (issue 16).
  db.exec("PRAGMA synchronous = FULL");
}

// A store of our schema version with a table dropped (by hand or another program)
// is refused when opened, not by whichever command first needs the table.
void require_tables(Database& db, const std::string& path) {
  std::set<std::string> present;
  Statement tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'");
  while (tables.step()) present.insert(tables.column_text(0));
  std::vector<const char*> required = {"runs",   "ceilings", "working_set", "skipped_ceilings",
                                       "points", "kernels"};
  if (query_int(db, "PRAGMA user_version") >= 4) required.push_back("trace_events");
  for (const char* table : required)
    if (!present.count(table))
      throw usage_error(path + ": damaged results database, it has no table " + table +
                        "; pass another --db");
}

// A read connection to a store of our schema, refused (a usage error) when a
// table is missing.
Database open_checked_for_reading(const std::string& path) {
  Database db = open_for_reading(path);
  configure_connection(db, false);
  require_tables(db, path);
  return db;
}

void create_schema(Database& db, const std::string& path) {
  Transaction transaction(db);
  // Another process may have created the schema since the file was inspected.
  if (classify(path, query_header(db)) == FileState::timeroof) return;
  db.exec(kSchemaSql);
  db.exec(trace_table::kCreateSql);
  db.exec("PRAGMA application_id = " + std::to_string(kStoreApplicationId));
  db.exec("PRAGMA user_version = " + std::to_string(kStoreSchemaVersion));
  transaction.commit();
}

// ---- Rejecting values the store cannot keep exactly ----

// NaN would come back as NULL (SQLite) or null (JSON): reject it with the field's name.
class FiniteCheck {
 public:
  explicit FiniteCheck(std::string subject) : subject_(std::move(subject)) {}

  void operator()(const std::string& field, double value) const {
    if (!std::isfinite(value)) {
      throw usage_error("refusing to store " + subject_ + ": " + field + " is " +
                        std::to_string(value) +
                        " (a value that was not measured is empty, never NaN or infinite)");
    }
  }
  void operator()(const std::string& field, const std::optional<double>& value) const {
    if (value) (*this)(field, *value);
  }
  void operator()(const std::string& field, const std::map<std::string, double>& values) const {
    for (const auto& [key, value] : values) (*this)(field + "." + key, value);
  }
  void operator()(const std::string& field, const json& value) const {
    if (value.is_number_float()) {
      (*this)(field, value.get<double>());
    } else if (value.is_object()) {
      for (const auto& [key, item] : value.items()) (*this)(field + "." + key, item);
    } else if (value.is_array()) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        (*this)(field + "[" + std::to_string(i) + "]", value[i]);
      }
    }
  }

 private:
  std::string subject_;
};

std::string point_name(const Point& point) {
  return "point " + point.sweep + "#" + std::to_string(point.seq);
}

void check_finite(const Ceiling& ceiling) {
  const FiniteCheck check("ceiling " + ceiling.name);
  check("measured", ceiling.measured);
  check("theoretical", ceiling.theoretical);
  check("spread", ceiling.spread);
  check("sm_clock_hz", ceiling.sm_clock_hz);
  check("mem_clock_hz", ceiling.mem_clock_hz);
  const auto check_power = [&](const std::string& prefix, const PowerConditions& power) {
    check(prefix + "watts", power.watts);
    check(prefix + "joules_per_call", power.joules_per_call);
    check(prefix + "window_s", power.window_s);
    check(prefix + "power_limit_w", power.power_limit_w);
    check(prefix + "max_temperature_c", power.max_temperature_c);
  };
  check_power("power.", ceiling.power);
  if (const auto& sustained = ceiling.sustained) {
    check("sustained.measured", sustained->measured);
    check("sustained.seconds", sustained->seconds);
    check("sustained.sm_clock_hz", sustained->sm_clock_hz);
    check_power("sustained.power.", sustained->power);
  }
}

void check_finite(const Run& run) {
  const FiniteCheck check("run " + run.uuid);
  check("spec", run.spec);
  const GpuInfo& gpu = run.machine.gpu;
  check("gpu.sm_clock_max_hz", gpu.sm_clock_max_hz);
  check("gpu.sm_clock_base_hz", gpu.sm_clock_base_hz);
  check("gpu.sm_clock_current_hz", gpu.sm_clock_current_hz);
  check("gpu.mem_clock_max_hz", gpu.mem_clock_max_hz);
  check("gpu.mem_clock_current_hz", gpu.mem_clock_current_hz);
  for (const Ceiling& ceiling : run.machine.ceilings) check_finite(ceiling);
  for (const WorkingSetSample& sample : run.machine.working_set) {
    check("working_set.bytes", sample.bytes);
    check("working_set.bytes_per_second", sample.bytes_per_second);
  }
}

void check_finite(const Point& point) {
  const FiniteCheck check(point_name(point));
  check("params", point.params);
  check("details", point.details);
  check("flops", point.flops);
  check("min_bytes", point.min_bytes);
  const Timing& t = point.timing;
  // The timing's JSON form holds every measured time and its statistics.
  check("timing", json(t));
  check("timing.kernel_time_s", t.kernel_time_s);
  check("timing.api_time_s", t.api_time_s);
  check("timing.launch_gap_s", t.launch_gap_s);
  check("timing.h2d_bytes", t.h2d_bytes);
  check("timing.h2d_time_s", t.h2d_time_s);
  check("timing.d2h_bytes", t.d2h_bytes);
  check("timing.d2h_time_s", t.d2h_time_s);
  check("counters", point.counters);
  for (std::size_t i = 0; i < point.kernels.size(); ++i) {
    const std::string field = "kernels[" + std::to_string(i) + "]";
    check(field + ".duration_s", point.kernels[i].duration_s);
    check(field + ".metrics", point.kernels[i].metrics);
  }
}

// ---- JSON columns ----

std::string dump(const json& value) {
  return value.dump();
}

// The columns of a run after its uuid (tool_version ... gpu_json), bound from
// index `first` on: what inserting and updating a run write alike.
void bind_run_columns(Statement& statement, int first, const Run& run) {
  statement.bind(first, run.tool_version)
      .bind(first + 1, run.git_sha)
      .bind(first + 2, run.command_line)
      .bind(first + 3, run.host)
      .bind(first + 4, run.started_at)
      .bind(first + 5, run.finished_at)
      .bind(first + 6, run.status)
      .bind(first + 7, dump(run.spec))
      .bind(first + 8, dump(json(run.machine.gpu)));
}

// A column that does not parse means the file was edited or damaged.
template <typename T>
T parse_column(const std::string& path, const std::string& text, const std::string& what) {
  const json value =
      parse_untrusted_json(text, path + ": damaged results database, " + what, "pass another --db");
  if constexpr (std::is_same_v<T, json>) {
    return value;
  } else {
    try {
      return read_untrusted<T>(value);
    } catch (const Error& e) {  // a field of the value, by its key path
      throw usage_error(path + ": damaged results database, cannot read " + what + ": " + e.what() +
                        "; pass another --db");
    }
  }
}

// A text column as UTF-8: stores written before the command line and host names
// were made UTF-8 hold them as the bytes they were, which no JSON can carry.
std::string text_column(const Statement& row, int index) {
  return replace_invalid_utf8(row.column_text(index));
}

// A column of names of `parse` (a ceiling kind, a point status): a name no build
// writes means the file was edited.
template <typename Parse>
auto named_column(const std::string& path, const Statement& row, int index, const std::string& what,
                  Parse parse) {
  try {
    return parse(text_column(row, index));
  } catch (const Error& e) {
    throw usage_error(path + ": damaged results database, " + what + ": " + e.what() +
                      "; pass another --db");
  }
}

}  // namespace

// ---- Opening ----

ResultsStore ResultsStore::open(const std::string& path, Access access) {
  // SQLite takes "" for a temporary file and ":memory:" (or a "file:" URI) for
  // names of its own: a store there would vanish with the process, so an import
  // would report success and keep nothing.
  if (path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0) {
    throw usage_error("--db '" + path +
                      "' is not a file path (SQLite would keep nothing there); pass a path such "
                      "as ./timeroof.db");
  }
  // SQLite would create "x.db" for "x.db/", a name that can only be a directory.
  if (path.back() == '/')
    throw usage_error("--db '" + path + "' ends with '/', so it names a directory; pass a file " +
                      "path such as " + path + "timeroof.db");
  const FileState state = inspect(path);
  if (access == Access::read_only) {
    if (state == FileState::missing) {
      throw usage_error(path + ": no results database here; run `timeroof run` to measure, or " +
                        "pass --db PATH");
    }
    if (state != FileState::timeroof) {
      throw usage_error(path + ": holds no timeroof results yet; run `timeroof run` to measure, " +
                        "or pass --db PATH");
    }
    return ResultsStore(open_checked_for_reading(path));
  }
  // A store this command would refuse is refused before it is opened for
  // writing: a WAL store's write connection creates -wal and -shm beside it.
  if (state == FileState::timeroof) open_checked_for_reading(path);
  Database db = open_database(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // SQLite opens a file it may not write read-only instead, and its first read of
  // a WAL store would leave -wal and -shm files beside it: refuse first.
  if (sqlite3_db_readonly(db.get(), "main") == 1)
    throw usage_error(path + " is read-only, and this command writes to the store; make it " +
                      "writable, or pass another --db");
  configure_connection(db, true);
  ResultsStore store(std::move(db));
  if (state != FileState::timeroof) {
    create_schema(store.db_, path);
    store.committed();  // a new store: nothing of the user's to keep as it was
  }
  return store;
}

// ---- Writing ----

void ResultsStore::require_run(std::int64_t run_id) {
  Statement statement = db_.prepare("SELECT 1 FROM runs WHERE id = ?1");
  statement.bind(1, run_id);
  if (!statement.step()) {
    throw usage_error(path() + ": no run with id " + std::to_string(run_id));
  }
}

std::int64_t ResultsStore::insert_run(const Run& run, const std::optional<WriterIdentity>& writer) {
  if (run.uuid.empty()) throw usage_error("refusing to store a run without a uuid");
  upgrade_schema();
  Statement existing = db_.prepare("SELECT id FROM runs WHERE uuid = ?1");
  existing.bind(1, run.uuid);
  if (existing.step()) {
    throw usage_error(path() + ": run " + run.uuid + " is already stored (id " +
                      std::to_string(existing.column_int64(0)) + "); nothing was written");
  }
  Statement insert = db_.prepare(
      "INSERT INTO runs (uuid, tool_version, git_sha, command_line, host, started_at, "
      "finished_at, status, spec_json, gpu_json, writer_json) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  insert.bind(1, run.uuid);
  bind_run_columns(insert, 2, run);
  if (writer)
    insert.bind(11, to_text(*writer));
  else
    insert.bind_null(11);
  insert.run();
  const std::int64_t run_id = db_.last_insert_rowid();
  insert_machine_measurements(run_id, run.machine);
  return run_id;
}

void ResultsStore::insert_machine_measurements(std::int64_t run_id, const Machine& machine) {
  for (std::size_t i = 0; i < machine.ceilings.size(); ++i) {
    insert_ceiling(run_id, static_cast<int>(i), machine.ceilings[i]);
  }
  Statement sample = db_.prepare(
      "INSERT INTO working_set (run_id, seq, bytes, bytes_per_second) VALUES (?1, ?2, ?3, ?4)");
  for (std::size_t i = 0; i < machine.working_set.size(); ++i) {
    sample.reset();
    sample.bind(1, run_id)
        .bind(2, static_cast<std::int64_t>(i))
        .bind(3, machine.working_set[i].bytes)
        .bind(4, machine.working_set[i].bytes_per_second);
    sample.run();
  }
  Statement skip = db_.prepare(
      "INSERT INTO skipped_ceilings (run_id, seq, name, reason, failed) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  for (std::size_t i = 0; i < machine.skipped.size(); ++i) {
    skip.reset();
    skip.bind(1, run_id)
        .bind(2, static_cast<std::int64_t>(i))
        .bind(3, machine.skipped[i].name)
        .bind(4, machine.skipped[i].reason)
        .bind(5, static_cast<std::int64_t>(machine.skipped[i].failed));
    skip.run();
  }
}

int ResultsStore::schema_version() {
  return static_cast<int>(query_int(db_, "PRAGMA user_version"));
}

bool ResultsStore::has_column(const char* table, const char* column) {
  Statement columns =
      db_.prepare(std::string("SELECT 1 FROM pragma_table_info('") + table + "') WHERE name = ?1");
  columns.bind(1, std::string_view(column));
  return columns.step();
}

// Schema 1 -> 2 -> 3 -> 4: columns and the trace_events table added, no row
// rewritten (older rows read as empty power, no writer and no trace). Called inside the transaction
// of the write that needs them, so a write that fails leaves the file at its schema, as a timeroof
// that only reads that schema can still open it.
void ResultsStore::upgrade_schema() {
  if (schema_version() >= kStoreSchemaVersion) return;
  if (!has_column("ceilings", "power_json"))
    db_.exec("ALTER TABLE ceilings ADD COLUMN power_json TEXT NOT NULL DEFAULT '{}'");
  if (!has_column("ceilings", "sustained_json"))
    db_.exec("ALTER TABLE ceilings ADD COLUMN sustained_json TEXT");
  if (!has_column("runs", "writer_json")) db_.exec("ALTER TABLE runs ADD COLUMN writer_json TEXT");
  db_.exec(trace_table::kCreateSql);
  db_.exec("PRAGMA user_version = " + std::to_string(kStoreSchemaVersion));
}

void ResultsStore::insert_ceiling(std::int64_t run_id, int seq, const Ceiling& ceiling) {
  upgrade_schema();
  Statement insert = db_.prepare(
      "INSERT INTO ceilings (run_id, seq, name, kind, unit, measured, theoretical, "
      "theoretical_source, method, repeats, spread, sm_clock_hz, mem_clock_hz, power_json, "
      "sustained_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)");
  insert.bind(1, run_id)
      .bind(2, seq)
      .bind(3, ceiling.name)
      .bind(4, to_string(ceiling.kind))
      .bind(5, ceiling.unit)
      .bind(6, ceiling.measured)
      .bind(7, ceiling.theoretical)
      .bind(8, ceiling.theoretical_source)
      .bind(9, ceiling.method)
      .bind(10, ceiling.repeats)
      .bind(11, ceiling.spread)
      .bind(12, ceiling.sm_clock_hz)
      .bind(13, ceiling.mem_clock_hz)
      .bind(14, dump(json(ceiling.power)));
  if (ceiling.sustained)
    insert.bind(15, dump(json(*ceiling.sustained)));
  else
    insert.bind_null(15);  // no sustained load was run
  insert.run();
}

std::int64_t ResultsStore::insert_point(std::int64_t run_id, const Point& point) {
  Statement existing =
      db_.prepare("SELECT id FROM points WHERE run_id = ?1 AND sweep = ?2 AND seq = ?3");
  existing.bind(1, run_id).bind(2, point.sweep).bind(3, point.seq);
  if (existing.step()) {
    throw usage_error(path() + ": " + point_name(point) + " is already stored for run " +
                      std::to_string(run_id) + " (--resume skips finished points)");
  }
  Statement insert = db_.prepare(
      "INSERT INTO points (run_id, sweep, seq, op, params_json, precision, math_mode, algorithm, "
      "flops, min_bytes, status, reason, timing_json, counters_json, details_json) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)");
  insert.bind(1, run_id)
      .bind(2, point.sweep)
      .bind(3, point.seq)
      .bind(4, point.op)
      .bind(5, dump(point.params))
      .bind(6, point.precision)
      .bind(7, point.math_mode)
      .bind(8, point.algorithm)
      .bind(9, point.flops)
      .bind(10, point.min_bytes)
      .bind(11, to_string(point.status))
      .bind(12, point.reason)
      .bind(13, dump(json(point.timing)))
      .bind(14, dump(json(point.counters)))
      .bind(15, dump(point.details));
  insert.run();
  const std::int64_t point_id = db_.last_insert_rowid();

  Statement kernel_insert = db_.prepare(
      "INSERT INTO kernels (point_id, seq, name, grid_x, grid_y, grid_z, block_x, block_y, "
      "block_z, duration_s, metrics_json) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  for (std::size_t i = 0; i < point.kernels.size(); ++i) {
    const KernelRecord& kernel = point.kernels[i];
    kernel_insert.reset();
    kernel_insert.bind(1, point_id)
        .bind(2, static_cast<std::int64_t>(i))
        .bind(3, kernel.name)
        .bind(4, kernel.grid[0])
        .bind(5, kernel.grid[1])
        .bind(6, kernel.grid[2])
        .bind(7, kernel.block[0])
        .bind(8, kernel.block[1])
        .bind(9, kernel.block[2])
        .bind(10, kernel.duration_s)
        .bind(11, dump(json(kernel.metrics)));
    kernel_insert.run();
  }
  return point_id;
}

void ResultsStore::committed() {
  if (wal_) return;
  db_.exec("PRAGMA journal_mode = WAL");
  wal_ = true;
}

std::int64_t ResultsStore::begin_run(Run& run) {
  check_finite(run);
  Transaction transaction(db_);
  const std::int64_t run_id = insert_run(run, this_writer());
  // Locked before the row is visible: no resume can take a run as it begins.
  if (!locks_.try_lock(run_id))
    throw environment_error(path() + ": the lock of the new run " + std::to_string(run_id) +
                            " in " + locks_.path() + " is held by another process");
  try {
    transaction.commit();
  } catch (...) {
    locks_.unlock(run_id);
    throw;
  }
  committed();
  run.id = run_id;
  return run_id;
}

std::optional<WriterIdentity> ResultsStore::stored_writer(std::int64_t run_id) {
  if (schema_version() < 3) return std::nullopt;
  Statement select = db_.prepare("SELECT writer_json FROM runs WHERE id = ?1");
  select.bind(1, run_id);
  if (!select.step() || select.column_is_null(0)) return std::nullopt;
  return writer_from_text(select.column_text(0));
}

void ResultsStore::claim_run(Run& run) {
  if (!locks_.try_lock(run.id)) {
    // The holder records itself just after it locks: a moment for it to do so.
    std::optional<WriterIdentity> holder = stored_writer(run.id);
    for (int i = 0; i < 20 && (!holder || writer_state(*holder) == WriterState::gone); ++i) {
      sqlite3_sleep(50);
      holder = stored_writer(run.id);
    }
    throw usage_error(path() + ": run " + std::to_string(run.id) + " is being written by " +
                      (holder ? "timeroof " + describe(*holder) : std::string("another process")) +
                      "; wait for it to end or stop it, then resume");
  }
  try {
    Transaction transaction(db_);
    upgrade_schema();
    Statement update = db_.prepare(
        "UPDATE runs SET writer_json = ?3, status = ?4, finished_at = '' "
        "WHERE id = ?1 AND uuid = ?2");
    update.bind(1, run.id)
        .bind(2, run.uuid)
        .bind(3, to_text(this_writer()))
        .bind(4, std::string_view(to_string(RunStatus::running)));
    update.run();
    if (db_.changes() != 1)
      throw usage_error(path() + ": no run with id " + std::to_string(run.id) + " and uuid " +
                        run.uuid + " to resume");
    transaction.commit();
  } catch (...) {
    locks_.unlock(run.id);
    throw;
  }
  committed();
  run.status = to_string(RunStatus::running);
  run.finished_at.clear();
}

void ResultsStore::update_run(const Run& run) {
  check_finite(run);
  Transaction transaction(db_);
  Statement update = db_.prepare(
      "UPDATE runs SET tool_version = ?3, git_sha = ?4, command_line = ?5, host = ?6, "
      "started_at = ?7, finished_at = ?8, status = ?9, spec_json = ?10, gpu_json = ?11 "
      "WHERE id = ?1 AND uuid = ?2");
  update.bind(1, run.id).bind(2, run.uuid);
  bind_run_columns(update, 3, run);
  update.run();
  if (db_.changes() != 1) {
    throw usage_error(path() + ": no run with id " + std::to_string(run.id) + " and uuid " +
                      run.uuid + " to update");
  }
  transaction.commit();
  committed();
}

void ResultsStore::add_ceiling(std::int64_t run_id, const Ceiling& ceiling) {
  check_finite(ceiling);
  Transaction transaction(db_);
  require_run(run_id);
  int seq = 0;
  {
    // Finalized before the commit: a statement still stepping keeps a read open,
    // and the switch to WAL after a first commit fails inside one.
    Statement next =
        db_.prepare("SELECT coalesce(max(seq) + 1, 0) FROM ceilings WHERE run_id = ?1");
    next.bind(1, run_id);
    next.step();
    seq = next.column_int(0);
  }
  insert_ceiling(run_id, seq, ceiling);
  transaction.commit();
  committed();
}

void ResultsStore::set_ceilings(std::int64_t run_id, const std::vector<Ceiling>& ceilings) {
  for (const Ceiling& ceiling : ceilings) check_finite(ceiling);
  Transaction transaction(db_);
  require_run(run_id);
  Statement erase = db_.prepare("DELETE FROM ceilings WHERE run_id = ?1");
  erase.bind(1, run_id);
  erase.run();
  for (std::size_t i = 0; i < ceilings.size(); ++i) {
    insert_ceiling(run_id, static_cast<int>(i), ceilings[i]);
  }
  transaction.commit();
  committed();
}

void ResultsStore::set_machine_measurements(std::int64_t run_id, const Machine& machine) {
  Run probe;
  probe.machine = machine;
  check_finite(probe);
  Transaction transaction(db_);
  require_run(run_id);
  for (const char* table : {"ceilings", "working_set", "skipped_ceilings"}) {
    Statement erase = db_.prepare(std::string("DELETE FROM ") + table + " WHERE run_id = ?1");
    erase.bind(1, run_id);
    erase.run();
  }
  insert_machine_measurements(run_id, machine);
  transaction.commit();
  committed();
}

std::int64_t ResultsStore::add_point(std::int64_t run_id, Point& point) {
  check_finite(point);
  Transaction transaction(db_);
  require_run(run_id);
  const std::int64_t point_id = insert_point(run_id, point);
  transaction.commit();
  committed();
  point.id = point_id;
  return point_id;
}

void ResultsStore::append_trace_events(std::int64_t run_id, std::span<const TraceEvent> events) {
  Transaction transaction(db_);
  require_run(run_id);
  upgrade_schema();  // schema 4 creates the table, in this transaction
  trace_table::append(db_, run_id, events);
  transaction.commit();
  committed();
}

std::vector<TraceEvent> ResultsStore::trace_events(std::int64_t run_id) {
  Transaction snapshot(db_, Transaction::Mode::deferred);
  std::vector<TraceEvent> events = trace_table::select(db_, path(), run_id);
  snapshot.commit();
  return events;
}

void ResultsStore::import_runs(const std::vector<RunRecord>& records) {
  for (const RunRecord& record : records) {
    check_finite(record.run);
    for (const Point& point : record.points) check_finite(point);
  }
  // A store whose pages are garbage takes no more writes (an import once wrote
  // into one and said it had).
  Statement check = db_.prepare("PRAGMA quick_check(1)");
  const std::string verdict = check.step() ? check.column_text(0) : "no answer";
  if (verdict != "ok")
    throw usage_error(path() + ": the store is damaged (SQLite quick_check: " + verdict +
                      "); nothing was imported; import into another --db");
  Transaction transaction(db_);
  for (const RunRecord& record : records) {
    const std::int64_t run_id = insert_run(record.run, std::nullopt);
    for (const Point& point : record.points) insert_point(run_id, point);
    trace_table::append(db_, run_id, record.trace);
  }
  transaction.commit();
  committed();
}

void ResultsStore::refuse_duplicate_runs(const std::string& path,
                                         const std::vector<RunRecord>& records) {
  std::set<std::string> given;
  for (const RunRecord& record : records) {
    if (!given.insert(record.run.uuid).second)
      throw usage_error("run " + record.run.uuid +
                        " is given twice; nothing was imported; import each run once");
  }
  // Anything but a writable store of ours is left to the writer's open, which
  // says what is wrong with the file (read-only first), or gives it the schema.
  if (::access(path.c_str(), W_OK) != 0 || inspect(path) != FileState::timeroof) return;
  ResultsStore store = open(path, Access::read_only);
  for (const RunRecord& record : records) {
    Statement existing = store.db_.prepare("SELECT id FROM runs WHERE uuid = ?1");
    existing.bind(1, record.run.uuid);
    if (existing.step())
      throw usage_error(path + ": run " + record.run.uuid + " is already stored (id " +
                        std::to_string(existing.column_int64(0)) + "); nothing was imported");
  }
}

// ---- Reading ----

std::vector<Run> ResultsStore::select_runs(const std::optional<std::int64_t>& only_id) {
  const std::string where = only_id ? " WHERE id = ?1" : "";
  // Stores before schema 3 record no writer (read-only opens never upgrade them).
  const bool has_writer = schema_version() >= 3;
  Statement select = db_.prepare(
      "SELECT id, uuid, tool_version, git_sha, command_line, host, started_at, finished_at, "
      "status, spec_json, gpu_json" +
      std::string(has_writer ? ", writer_json" : "") + " FROM runs" + where + " ORDER BY id");
  if (only_id) select.bind(1, *only_id);
  std::vector<Run> runs;
  std::unordered_map<std::int64_t, std::size_t> index_of;
  while (select.step()) {
    Run run;
    run.id = select.column_int64(0);
    run.uuid = text_column(select, 1);
    run.tool_version = text_column(select, 2);
    run.git_sha = text_column(select, 3);
    run.command_line = text_column(select, 4);
    run.host = text_column(select, 5);
    run.started_at = text_column(select, 6);
    run.finished_at = text_column(select, 7);
    run.status = text_column(select, 8);
    const std::string what = "run " + std::to_string(run.id);
    run.spec = parse_column<json>(path(), text_column(select, 9), what + " spec");
    run.machine.gpu = parse_column<GpuInfo>(path(), text_column(select, 10), what + " gpu");
    if (has_writer && run.status == to_string(RunStatus::running) && !select.column_is_null(11)) {
      const std::optional<WriterIdentity> writer = writer_from_text(select.column_text(11));
      if (writer && writer_state(*writer) == WriterState::gone)
        run.status = to_string(RunStatus::interrupted);
    }
    index_of[run.id] = runs.size();
    runs.push_back(std::move(run));
  }

  // A store of schema 1 has no power columns (read-only opens never upgrade it).
  const bool has_power = schema_version() >= 2;
  Statement ceilings = db_.prepare(
      "SELECT run_id, name, kind, unit, measured, theoretical, theoretical_source, method, "
      "repeats, spread, sm_clock_hz, mem_clock_hz" +
      std::string(has_power ? ", power_json, sustained_json" : "") + " FROM ceilings" +
      std::string(only_id ? " WHERE run_id = ?1" : "") + " ORDER BY run_id, seq");
  if (only_id) ceilings.bind(1, *only_id);
  while (ceilings.step()) {
    const auto run = index_of.find(ceilings.column_int64(0));
    if (run == index_of.end()) continue;
    Ceiling ceiling;
    ceiling.name = text_column(ceilings, 1);
    ceiling.kind = named_column(
        path(), ceilings, 2,
        "ceiling " + std::to_string(ceilings.column_int64(0)) + "/" + ceiling.name + " kind",
        ceiling_kind_from_string);
    ceiling.unit = text_column(ceilings, 3);
    ceiling.measured = ceilings.column_double(4);
    ceiling.theoretical = ceilings.column_optional_double(5);
    ceiling.theoretical_source = text_column(ceilings, 6);
    ceiling.method = text_column(ceilings, 7);
    ceiling.repeats = ceilings.column_int(8);
    ceiling.spread = ceilings.column_double(9);
    ceiling.sm_clock_hz = ceilings.column_optional_double(10);
    ceiling.mem_clock_hz = ceilings.column_optional_double(11);
    if (has_power) {
      const std::string what = "ceiling " + ceiling.name;
      ceiling.power =
          parse_column<PowerConditions>(path(), ceilings.column_text(12), what + " power");
      if (!ceilings.column_is_null(13))
        ceiling.sustained =
            parse_column<SustainedRoof>(path(), ceilings.column_text(13), what + " sustained load");
    }
    runs[run->second].machine.ceilings.push_back(std::move(ceiling));
  }

  Statement samples =
      db_.prepare("SELECT run_id, bytes, bytes_per_second FROM working_set" +
                  std::string(only_id ? " WHERE run_id = ?1" : "") + " ORDER BY run_id, seq");
  if (only_id) samples.bind(1, *only_id);
  while (samples.step()) {
    const auto run = index_of.find(samples.column_int64(0));
    if (run == index_of.end()) continue;
    runs[run->second].machine.working_set.push_back(
        {samples.column_double(1), samples.column_double(2)});
  }

  Statement skipped =
      db_.prepare("SELECT run_id, name, reason, failed FROM skipped_ceilings" +
                  std::string(only_id ? " WHERE run_id = ?1" : "") + " ORDER BY run_id, seq");
  if (only_id) skipped.bind(1, *only_id);
  while (skipped.step()) {
    const auto run = index_of.find(skipped.column_int64(0));
    if (run == index_of.end()) continue;
    runs[run->second].machine.skipped.push_back(
        {text_column(skipped, 1), text_column(skipped, 2), skipped.column_int(3) != 0});
  }
  return runs;
}

std::vector<Point> ResultsStore::select_points(std::int64_t run_id) {
  Statement select = db_.prepare(
      "SELECT id, sweep, seq, op, params_json, precision, math_mode, algorithm, flops, "
      "min_bytes, status, reason, timing_json, counters_json, details_json FROM points "
      "WHERE run_id = ?1 "
      "ORDER BY id");
  select.bind(1, run_id);
  std::vector<Point> points;
  std::unordered_map<std::int64_t, std::size_t> index_of;
  while (select.step()) {
    Point point;
    point.id = select.column_int64(0);
    point.sweep = text_column(select, 1);
    point.seq = select.column_int(2);
    point.op = text_column(select, 3);
    const std::string what = "point " + std::to_string(point.id);
    point.params = parse_column<json>(path(), text_column(select, 4), what + " params");
    point.precision = text_column(select, 5);
    point.math_mode = text_column(select, 6);
    point.algorithm = text_column(select, 7);
    point.flops = select.column_double(8);
    point.min_bytes = select.column_double(9);
    point.status = named_column(path(), select, 10, what + " status", point_status_from_string);
    point.reason = text_column(select, 11);
    point.timing = parse_column<Timing>(path(), text_column(select, 12), what + " timing");
    point.counters = parse_column<std::map<std::string, double>>(path(), text_column(select, 13),
                                                                 what + " counters");
    point.details = parse_column<json>(path(), text_column(select, 14), what + " details");
    index_of[point.id] = points.size();
    points.push_back(std::move(point));
  }

  Statement kernels = db_.prepare(
      "SELECT k.point_id, k.name, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, "
      "k.duration_s, k.metrics_json FROM kernels k JOIN points p ON p.id = k.point_id "
      "WHERE p.run_id = ?1 ORDER BY k.point_id, k.seq");
  kernels.bind(1, run_id);
  while (kernels.step()) {
    const auto point = index_of.find(kernels.column_int64(0));
    if (point == index_of.end()) continue;
    KernelRecord kernel;
    kernel.name = text_column(kernels, 1);
    kernel.grid = {kernels.column_int(2), kernels.column_int(3), kernels.column_int(4)};
    kernel.block = {kernels.column_int(5), kernels.column_int(6), kernels.column_int(7)};
    kernel.duration_s = kernels.column_double(8);
    kernel.metrics = parse_column<std::map<std::string, double>>(
        path(), text_column(kernels, 9), "kernel of point " + std::to_string(point->first));
    points[point->second].kernels.push_back(std::move(kernel));
  }
  return points;
}

std::optional<std::int64_t> ResultsStore::find_run_id(const std::string& id_or_uuid_prefix) {
  const std::string& text = id_or_uuid_prefix;
  if (text.empty()) throw usage_error("empty run id; pass a run id or a uuid prefix");
  const bool all_digits =
      text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
  if (all_digits) {
    Statement by_id = db_.prepare("SELECT id FROM runs WHERE id = ?1");
    by_id.bind(1, std::stoll(text));
    if (by_id.step()) return by_id.column_int64(0);
  }
  Statement by_prefix = db_.prepare(
      "SELECT id, uuid, started_at FROM runs WHERE substr(uuid, 1, length(?1)) = ?1 ORDER BY id");
  by_prefix.bind(1, text);
  std::vector<std::int64_t> ids;
  std::string candidates;
  while (by_prefix.step()) {
    ids.push_back(by_prefix.column_int64(0));
    candidates += "\n  " + by_prefix.column_text(1) + " (id " + std::to_string(ids.back()) +
                  ", started " + by_prefix.column_text(2) + ")";
  }
  if (ids.empty()) return std::nullopt;
  if (ids.size() > 1) {
    throw usage_error("run '" + text + "' is ambiguous in " + path() + ": it starts " +
                      std::to_string(ids.size()) + " uuids; give more of the uuid:" + candidates);
  }
  return ids.front();
}

std::vector<Run> ResultsStore::list_runs() {
  Transaction snapshot(db_, Transaction::Mode::deferred);
  std::vector<Run> runs = select_runs(std::nullopt);
  snapshot.commit();
  return runs;
}

std::optional<RunRecord> ResultsStore::load_run(const std::string& id_or_uuid_prefix) {
  Transaction snapshot(db_, Transaction::Mode::deferred);
  const std::optional<std::int64_t> id = find_run_id(id_or_uuid_prefix);
  if (!id) return std::nullopt;
  std::vector<Run> runs = select_runs(id);
  if (runs.empty()) return std::nullopt;
  RunRecord record{std::move(runs.front()), select_points(*id),
                   trace_table::select(db_, path(), *id)};
  snapshot.commit();
  return record;
}

RunRecord ResultsStore::load_run(std::int64_t id) {
  Transaction snapshot(db_, Transaction::Mode::deferred);
  std::vector<Run> runs = select_runs(id);
  if (runs.empty()) throw usage_error(path() + ": no run with id " + std::to_string(id));
  RunRecord record{std::move(runs.front()), select_points(id),
                   trace_table::select(db_, path(), id)};
  snapshot.commit();
  return record;
}

std::set<int> ResultsStore::finished_point_seqs(std::int64_t run_id, const std::string& sweep) {
  Statement select = db_.prepare("SELECT seq FROM points WHERE run_id = ?1 AND sweep = ?2");
  select.bind(1, run_id).bind(2, sweep);
  std::set<int> seqs;
  while (select.step()) seqs.insert(select.column_int(0));
  return seqs;
}

std::vector<RunRecord> ResultsStore::load_all() {
  Transaction snapshot(db_, Transaction::Mode::deferred);
  std::vector<RunRecord> records;
  for (Run& run : select_runs(std::nullopt)) {
    std::vector<Point> points = select_points(run.id);
    std::vector<TraceEvent> trace = trace_table::select(db_, path(), run.id);
    records.push_back(RunRecord{std::move(run), std::move(points), std::move(trace)});
  }
  snapshot.commit();
  return records;
}

}  // namespace timeroof
