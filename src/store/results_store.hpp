// The results store: one SQLite file (default ./timeroof.db) holding runs, their
// machine ceilings and their points. One transaction per point, so a killed sweep
// keeps every finished point and --resume can continue it. Numbers the model uses
// are numeric columns; nested structures are JSON text from core/json_io.hpp, so
// what is loaded equals what was stored (RunRecord::operator==).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/results.hpp"
#include "core/trace_events.hpp"
#include "src/store/run_writer.hpp"
#include "src/store/sqlite.hpp"

namespace timeroof {

// PRAGMA application_id of every timeroof database: "TROF".
inline constexpr std::int32_t kStoreApplicationId = 0x54524F46;

class ResultsStore {
 public:
  enum class Access {
    read_only,   // never creates or modifies anything; the file must exist
    read_write,  // creates the file and its schema where there is none yet
  };

  // Validates the file before anything is written to it: a file that is not a
  // timeroof database (not SQLite, foreign SQLite, newer schema) is left
  // byte-for-byte untouched and reported as a usage error naming the path.
  static ResultsStore open(const std::string& path, Access access);

  ResultsStore(ResultsStore&&) noexcept = default;
  ResultsStore& operator=(ResultsStore&&) noexcept = default;

  const std::string& path() const noexcept { return db_.path(); }

  // Inserts the run and its machine (GPU and ceilings); assigns and returns run.id.
  // The uuid must be new to this store. Records this process as the run's writer
  // and holds the run's lock (run_writer.hpp) until the store is closed.
  std::int64_t begin_run(Run& run);
  // --resume: takes the run's lock at once or refuses with a usage error naming
  // the run and the process that holds it (its own first writer, or another
  // resume). Then records this process as the writer and stores the run as
  // running again (finished_at empty), in `run` too.
  void claim_run(Run& run);
  // Rewrites the run's row (found by run.id): provenance, status, finished_at,
  // spec and the GPU. Ceilings are left alone: add_ceiling / set_ceilings own them.
  void update_run(const Run& run);
  // Appends one ceiling to the run's machine.
  void add_ceiling(std::int64_t run_id, const Ceiling& ceiling);
  // Replaces all of the run's ceilings in one transaction.
  void set_ceilings(std::int64_t run_id, const std::vector<Ceiling>& ceilings);
  // Replaces the run's ceilings, working-set curve and skipped roofs in one transaction.
  void set_machine_measurements(std::int64_t run_id, const Machine& machine);
  // Stores the point with its kernel records in one transaction; assigns and
  // returns point.id. (point.sweep, point.seq) must be new within the run.
  std::int64_t add_point(std::int64_t run_id, Point& point);
  // `timeroof profile`: appends traced records to the run in one transaction,
  // numbered after those already stored. The first such write upgrades the
  // store to schema 4 (the trace_events table) inside that transaction.
  void append_trace_events(std::int64_t run_id, std::span<const TraceEvent> events);
  // The run's traced records in the order they were appended; empty for a run
  // without a trace and for stores before schema 4.
  std::vector<TraceEvent> trace_events(std::int64_t run_id);

  // Runs are read with the status they were stored with, except that a
  // "running" run whose writer is provably gone reads as "interrupted"
  // (RunStatus; run_writer.hpp says why it is derived, not stored).
  //
  // Every run with its machine, oldest first; points are not loaded.
  std::vector<Run> list_runs();
  // Accepts a store id ("3"), a full uuid or a unique uuid prefix. An all-digit
  // text is an id where such a run exists, else a uuid prefix. Empty when nothing
  // matches; a usage error listing the candidates when the prefix is ambiguous.
  std::optional<RunRecord> load_run(const std::string& id_or_uuid_prefix);
  // The run with this store id; a usage error when there is none.
  RunRecord load_run(std::int64_t id);
  // Seqs of the points of `sweep` already stored for the run (whatever their
  // status): the ones --resume skips.
  std::set<int> finished_point_seqs(std::int64_t run_id, const std::string& sweep);
  // Every run with its points, oldest first.
  std::vector<RunRecord> load_all();
  // Imports runs (ids are reassigned) in one transaction: if any uuid is already
  // stored, a usage error names it and nothing is imported.
  void import_runs(const std::vector<RunRecord>& records);
  // Refuses records that name one run twice, or a run the store at `path` has,
  // reading the store only. A refused import then never opens a writer
  // connection: two of them closing at the same moment can each leave the
  // other to remove the -wal and -shm files, and both leave them (seen in CI).
  // import_runs checks again inside its transaction.
  static void refuse_duplicate_runs(const std::string& path, const std::vector<RunRecord>& records);

 private:
  explicit ResultsStore(sqlite::Database db) : locks_(db.path()), db_(std::move(db)) {}

  // `writer`: none for an imported run (its writer was another store's).
  std::int64_t insert_run(const Run& run, const std::optional<WriterIdentity>& writer);
  std::optional<WriterIdentity> stored_writer(std::int64_t run_id);
  bool has_column(const char* table, const char* column);
  void insert_ceiling(std::int64_t run_id, int seq, const Ceiling& ceiling);
  int schema_version();
  void upgrade_schema();
  void insert_machine_measurements(std::int64_t run_id, const Machine& machine);
  std::int64_t insert_point(std::int64_t run_id, const Point& point);
  void require_run(std::int64_t run_id);
  std::optional<std::int64_t> find_run_id(const std::string& id_or_uuid_prefix);
  std::vector<Run> select_runs(const std::optional<std::int64_t>& only_id);
  std::vector<Point> select_points(std::int64_t run_id);

  // After a commit: the store switches to WAL once (configure_connection says why).
  void committed();

  RunLocks locks_;  // before db_: let go of after the connection is closed
  sqlite::Database db_;
  bool wal_ = false;
};

}  // namespace timeroof
