#include "src/store/trace_table.hpp"

#include <limits>

#include "core/error.hpp"
#include "core/json_io.hpp"

namespace timeroof::trace_table {
namespace {

// SQLite integers are signed 64-bit: CUPTI's nanosecond timestamps (since the
// epoch, ~2^61) and byte counts fit; a larger one is refused, not wrapped.
std::int64_t as_column(std::uint64_t value, const char* field) {
  if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    throw usage_error(std::string("refusing to store a trace record: ") + field + " is " +
                      std::to_string(value) + ", past the store's 2^63 - 1");
  return static_cast<std::int64_t>(value);
}

template <typename T>
T from_column(const sqlite::Statement& row, int index) {
  const std::int64_t value = row.column_int64(index);
  if (value < 0 || static_cast<std::uint64_t>(value) > std::numeric_limits<T>::max())
    throw usage_error("column " + std::to_string(index) + " holds " + std::to_string(value) +
                      ", out of its range");
  return static_cast<T>(value);
}

}  // namespace

bool exists(sqlite::Database& db) {
  sqlite::Statement table =
      db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'trace_events'");
  return table.step();
}

void append(sqlite::Database& db, std::int64_t run_id, std::span<const TraceEvent> events) {
  sqlite::Statement last =
      db.prepare("SELECT COALESCE(MAX(seq), -1) FROM trace_events WHERE run_id = ?1");
  last.bind(1, run_id);
  std::int64_t seq = last.step() ? last.column_int64(0) + 1 : 0;
  sqlite::Statement insert = db.prepare(
      "INSERT INTO trace_events (run_id, seq, kind, name, start_ns, end_ns, device, stream, "
      "correlation_id, process_id, thread_id, bytes, details_json) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
  for (const TraceEvent& e : events) {
    insert.bind(1, run_id)
        .bind(2, seq++)
        .bind(3, std::string(to_string(e.kind)))
        .bind(4, e.name)
        .bind(5, as_column(e.start_ns, "start_ns"))
        .bind(6, as_column(e.end_ns, "end_ns"))
        .bind(7, e.device)
        .bind(8, e.stream)
        .bind(9, e.correlation_id)
        .bind(10, e.process_id)
        .bind(11, e.thread_id)
        .bind(12, as_column(e.bytes, "bytes"))
        .bind(13, e.details.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    insert.run();
    insert.reset();
  }
}

std::vector<TraceEvent> select(sqlite::Database& db, const std::string& path, std::int64_t run_id) {
  std::vector<TraceEvent> events;
  if (!exists(db)) return events;
  sqlite::Statement rows = db.prepare(
      "SELECT seq, kind, name, start_ns, end_ns, device, stream, correlation_id, process_id, "
      "thread_id, bytes, details_json FROM trace_events WHERE run_id = ?1 ORDER BY seq");
  rows.bind(1, run_id);
  while (rows.step()) {
    const std::string where = path + ": damaged results database, trace record " +
                              std::to_string(rows.column_int64(0)) + " of run " +
                              std::to_string(run_id);
    try {
      TraceEvent e;
      const std::string kind = rows.column_text(1);
      const auto parsed = find_trace_kind(kind);
      if (!parsed) throw usage_error("unknown kind '" + kind + "'");
      e.kind = *parsed;
      e.name = rows.column_text(2);
      e.start_ns = from_column<std::uint64_t>(rows, 3);
      e.end_ns = from_column<std::uint64_t>(rows, 4);
      e.device = from_column<std::uint32_t>(rows, 5);
      e.stream = from_column<std::uint32_t>(rows, 6);
      e.correlation_id = from_column<std::uint32_t>(rows, 7);
      e.process_id = from_column<std::uint32_t>(rows, 8);
      e.thread_id = from_column<std::uint32_t>(rows, 9);
      e.bytes = from_column<std::uint64_t>(rows, 10);
      e.details =
          parse_untrusted_json(rows.column_text(11), where + " details_json", "pass another --db");
      if (!e.details.is_object()) throw usage_error("details_json is not an object");
      events.push_back(std::move(e));
    } catch (const Error& e) {
      throw usage_error(where + ": " + e.what() + "; pass another --db");
    }
  }
  return events;
}

}  // namespace timeroof::trace_table
