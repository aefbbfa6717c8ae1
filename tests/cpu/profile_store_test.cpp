// `timeroof profile`'s records in the store (issue 17): trace events round trip
// exactly and in order, a schema-3 store is upgraded to 4 by the first write of
// trace events (inside that write's transaction) and reads as traceless before,
// and the export carries "trace" only for runs that have one.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "core/trace_events.hpp"
#include "src/store/results_store.hpp"
#include "tests/support/raw_sqlite.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

using Access = ResultsStore::Access;
using test::raw_query_text;

// One record of every kind, with the details each kind carries.
std::vector<TraceEvent> sample_trace() {
  std::vector<TraceEvent> trace;
  TraceEvent kernel;
  kernel.kind = TraceKind::kernel;
  kernel.name = "void scale<float>(float*, int)";
  kernel.start_ns = 1'764'000'000'000'000'100ULL;  // CUPTI's clock: ns since the epoch
  kernel.end_ns = 1'764'000'000'000'050'100ULL;
  kernel.device = 1;
  kernel.stream = 7;
  kernel.correlation_id = 42;
  kernel.details = {{"grid", {4096, 1, 1}},
                    {"block", {256, 1, 1}},
                    {"registers", 16},
                    {"static_shared_bytes", 0},
                    {"dynamic_shared_bytes", 1024}};
  trace.push_back(kernel);
  TraceEvent copy = kernel;
  copy.kind = TraceKind::memcpy;
  copy.name = "HtoD";
  copy.bytes = 4194304;
  copy.details = {{"src_kind", "pageable"}, {"dst_kind", "device"}};
  trace.push_back(copy);
  TraceEvent api;
  api.kind = TraceKind::runtime_api;
  api.name = "cudaLaunchKernel";
  api.start_ns = kernel.start_ns - 5000;
  api.end_ns = kernel.start_ns - 1000;
  api.correlation_id = 42;
  api.process_id = 4242;
  api.thread_id = 4243;
  api.details = {{"cbid", 211}, {"return_value", 0}};
  trace.push_back(api);
  TraceEvent range;
  range.kind = TraceKind::nvtx_range;
  range.name = "layer0 \xce\xbb";  // UTF-8 names stay byte for byte
  range.start_ns = api.start_ns;
  range.end_ns = kernel.end_ns;
  range.process_id = 4242;
  range.thread_id = 4243;
  range.details = {{"domain", ""}, {"category", 1}, {"color", 4281558732U}, {"range_id", 3}};
  trace.push_back(range);
  TraceEvent mark = range;
  mark.kind = TraceKind::nvtx_mark;
  mark.name = "done";
  mark.end_ns = mark.start_ns;
  mark.details = {{"domain", ""}, {"category", 0}, {"color", nullptr}, {"range_id", 4}};
  trace.push_back(mark);
  return trace;
}

Run profile_run(const std::string& uuid) {
  Run run = new_run("timeroof profile -- ./app");
  run.uuid = uuid;
  run.spec = {{"profile", {{"command", {"./app"}}, {"journal_format", 1}}}};
  return run;
}

TEST(ProfileStore, TraceEventsRoundTripInOrderAcrossAppends) {
  test::TempDir dir;
  const std::string path = dir.file("trace.db");
  const std::vector<TraceEvent> trace = sample_trace();
  timeroof::Run run = profile_run("c1b2c3d4-0000-4000-8000-000000000001");
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    store.begin_run(run);
    store.append_trace_events(run.id, std::span(trace).first(2));
    store.append_trace_events(run.id, std::span(trace).subspan(2));
    EXPECT_EQ(store.trace_events(run.id), trace);
  }
  ResultsStore store = ResultsStore::open(path, Access::read_only);
  const RunRecord record = store.load_run(run.id);
  EXPECT_EQ(record.trace, trace);
  EXPECT_EQ(store.load_all().front().trace, trace);
  EXPECT_EQ(raw_query_text(path, "SELECT group_concat(seq) FROM trace_events"), "0,1,2,3,4");
  EXPECT_EQ(raw_query_text(path, "SELECT typeof(start_ns) FROM trace_events LIMIT 1"), "integer");
}

// A store written before schema 4 reads as traceless; the first append of
// trace events creates the table and sets schema 4 in its own transaction, so
// an append refused (no such run) leaves schema 3 behind.
TEST(ProfileStore, SchemaThreeStoreUpgradesOnFirstTraceWrite) {
  test::TempDir dir;
  const std::string path = dir.file("schema3.db");
  timeroof::Run run = profile_run("c1b2c3d4-0000-4000-8000-000000000002");
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    store.begin_run(run);
  }
  test::raw_exec(path, "DROP TABLE trace_events; PRAGMA user_version = 3;");
  {
    ResultsStore store = ResultsStore::open(path, Access::read_only);
    EXPECT_TRUE(store.load_run(run.id).trace.empty());
  }
  const std::vector<TraceEvent> trace = sample_trace();
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    EXPECT_THROW(store.append_trace_events(run.id + 100, trace), Error);
  }
  EXPECT_EQ(raw_query_text(path, "PRAGMA user_version"), "3");
  EXPECT_EQ(raw_query_text(path, "SELECT count(*) FROM sqlite_master WHERE name = 'trace_events'"),
            "0");
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    store.append_trace_events(run.id, trace);
    EXPECT_EQ(store.load_run(run.id).trace, trace);
  }
  EXPECT_EQ(raw_query_text(path, "PRAGMA user_version"), std::to_string(kStoreSchemaVersion));
  EXPECT_EQ(kStoreSchemaVersion, 4);
}

// A schema-4 store that lost its trace table is refused when opened, naming it.
TEST(ProfileStore, SchemaFourStoreWithoutTraceTableIsRefused) {
  test::TempDir dir;
  const std::string path = dir.file("damaged.db");
  { ResultsStore::open(path, Access::read_write); }
  test::raw_exec(path, "DROP TABLE trace_events;");
  try {
    ResultsStore::open(path, Access::read_only);
    ADD_FAILURE() << "opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no table trace_events"), std::string::npos) << e.what();
  }
}

TEST(ProfileStore, ExportCarriesTraceOnlyWhenThereIsOne) {
  RunRecord traced;
  traced.run = profile_run("c1b2c3d4-0000-4000-8000-000000000003");
  traced.trace = sample_trace();
  RunRecord plain;
  plain.run = profile_run("c1b2c3d4-0000-4000-8000-000000000004");
  const nlohmann::json doc = export_document({traced, plain});
  EXPECT_TRUE(doc["runs"][0].contains("trace"));
  EXPECT_FALSE(doc["runs"][1].contains("trace"));
  const std::string text = doc.dump();
  const std::vector<RunRecord> parsed =
      parse_export_document(nlohmann::json::parse(text), "memory");
  ASSERT_EQ(parsed.size(), 2U);
  EXPECT_EQ(parsed[0].trace, traced.trace);
  EXPECT_TRUE(parsed[1].trace.empty());
  EXPECT_EQ(export_document(parsed).dump(), text);

  // Through a store: import, load, export again: the same document.
  test::TempDir dir;
  const std::string path = dir.file("imported.db");
  ResultsStore store = ResultsStore::open(path, Access::read_write);
  store.import_runs(parsed);
  std::vector<RunRecord> loaded = store.load_all();
  ASSERT_EQ(loaded.size(), 2U);
  EXPECT_EQ(loaded[0].trace, traced.trace);
  EXPECT_TRUE(loaded[1].trace.empty());
  for (RunRecord& r : loaded) r.run.id = 0;  // ids are the store's
  nlohmann::json again = export_document(loaded);
  nlohmann::json original = doc;
  again.erase("exported_by");
  original.erase("exported_by");
  EXPECT_EQ(again, original);
}

TEST(ProfileStore, ABadTraceRecordInAnExportIsNamed) {
  RunRecord traced;
  traced.run = profile_run("c1b2c3d4-0000-4000-8000-000000000005");
  traced.trace = sample_trace();
  nlohmann::json doc = export_document({traced});
  doc["runs"][0]["trace"][1]["kind"] = "teleport";
  try {
    parse_export_document(doc, "bad.json");
    ADD_FAILURE() << "parsed";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("trace"), std::string::npos) << message;
    EXPECT_NE(message.find("unknown trace record kind"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace timeroof
