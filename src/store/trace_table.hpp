// The store's table of traced records (schema 4, `timeroof profile`): one row per
// TraceEvent of a run, numbered by seq in the order they were written. Created
// by the first write of trace events (ResultsStore::append_trace_events), inside
// that write's transaction, so stores of schema 1-3 stay as they are until then.
// Used by ResultsStore only; free functions over its connection keep
// results_store.cpp to the calls.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/trace_events.hpp"
#include "src/store/sqlite.hpp"

namespace timeroof::trace_table {

inline constexpr const char* kCreateSql = R"sql(
CREATE TABLE IF NOT EXISTS trace_events (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  device INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  correlation_id INTEGER NOT NULL,
  process_id INTEGER NOT NULL,
  thread_id INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  details_json TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);
)sql";

bool exists(sqlite::Database& db);
// Appends after the run's last seq; the caller holds the transaction.
void append(sqlite::Database& db, std::int64_t run_id, std::span<const TraceEvent> events);
// The run's records by seq; empty where the table does not exist (schema < 4).
// A row that does not read back (a hand-edited file) is a usage error naming
// `path`, the run and the seq.
std::vector<TraceEvent> select(sqlite::Database& db, const std::string& path, std::int64_t run_id);

}  // namespace timeroof::trace_table
