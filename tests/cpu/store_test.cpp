// The results store: exact round trips, refusal to touch files that are not
// ours, and durability of every committed point when the writer is killed.
#include "src/store/results_store.hpp"

#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "tests/support/raw_sqlite.hpp"

namespace timeroof {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Access = ResultsStore::Access;

// ---- Helpers ----

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' not found in: " << text;
}

// Runs f, expects a timeroof::Error with the given exit code, returns its message.
template <typename F>
std::string error_of(F&& f, ExitCode expected = ExitCode::usage) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(expected)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a timeroof::Error, nothing was thrown";
  return "";
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

using test::raw_exec;
using test::raw_query_text;

bool has_side_files(const std::string& path) {
  return fs::exists(path + "-wal") || fs::exists(path + "-shm") || fs::exists(path + "-journal");
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device random;
    dir_ = fs::temp_directory_path() /
           ("timeroof_store_test_" + std::to_string(getpid()) + "_" + std::to_string(random()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// ---- Sample data: every field set, optionals both empty and set ----

Run sample_run(const std::string& uuid) {
  Run run;
  run.uuid = uuid;
  run.tool_version = "0.1.0";
  run.git_sha = "0123456789abcdef0123456789abcdef01234567";
  run.command_line = "timeroof run --db \"my results.db\" --device 0";
  run.host = "gpu-node-7";
  run.started_at = "2025-01-02T03:04:05.678Z";
  run.finished_at = "";
  run.status = "running";
  run.spec = {{"sweeps", {"conv2d", "lstm"}},
              {"batch", {1, 2, 4, 1024}},
              {"alpha", 0.1},
              {"nested", {{"tiny", 1e-300}, {"none", nullptr}, {"on", true}}}};
  GpuInfo& gpu = run.machine.gpu;
  gpu.index = 1;
  gpu.name = "NVIDIA H200";
  gpu.chip = "GH100";
  gpu.uuid = "GPU-8c1f3a2b-0000-1111-2222-333344445555";
  gpu.pci_bus_id = "00000000:19:00.0";
  gpu.cc_major = 9;
  gpu.cc_minor = 0;
  gpu.sm_count = 132;
  gpu.l2_bytes = 62914560;
  gpu.memory_bytes = 150754820096;
  gpu.memory_bus_bits = 6144;
  gpu.shared_per_sm_bytes = 233472;
  gpu.sm_clock_max_hz = 1.98e9;
  gpu.sm_clock_base_hz = std::nullopt;
  gpu.sm_clock_current_hz = 1.755e9;
  gpu.mem_clock_max_hz = 2.619e9;
  gpu.mem_clock_current_hz = std::nullopt;
  gpu.versions = {"580.159.04", "13.0", "13.0.48", "9.14.0", "13.0.0.19", "13.0"};
  gpu.counters = {false, "RmProfilingAdminOnly is 1", "run as root or set NVreg_...=0",
                  "probe <kernel> & read"};

  Ceiling fma;
  fma.name = "fp32_fma";
  fma.kind = CeilingKind::compute;
  fma.unit = "FLOP/s";
  fma.measured = 5.7e13;
  fma.theoretical = 6.69e13;
  fma.theoretical_source = "sm__inst_executed_pipe_fma.sum.peak_sustained x clock";
  fma.method = "ffma chain, 132x1024 threads";
  fma.repeats = 20;
  fma.spread = 0.013;
  fma.sm_clock_hz = 1.98e9;
  fma.mem_clock_hz = std::nullopt;
  fma.power.watts = 612.5;
  fma.power.joules_per_call = 0.01225;
  fma.power.window_s = 0.41;
  fma.power.power_limit_w = 700;
  fma.power.max_temperature_c = 61;
  fma.power.clock_limits = {"sw_power_cap"};
  SustainedRoof sustained;
  sustained.measured = 5.1e13;
  sustained.seconds = 10.02;
  sustained.sm_clock_hz = 1.755e9;
  sustained.power.watts = 699.1;
  sustained.power.clock_limits = {"sw_power_cap", "sw_thermal_slowdown"};
  fma.sustained = sustained;
  Ceiling hbm;
  hbm.name = "hbm";
  hbm.kind = CeilingKind::bandwidth;
  hbm.unit = "B/s";
  hbm.measured = 3.9e12;
  hbm.theoretical = std::nullopt;
  hbm.method = "float4 copy, 1 GiB";
  hbm.repeats = 10;
  hbm.spread = 0.1;
  hbm.sm_clock_hz = std::nullopt;
  hbm.mem_clock_hz = 2.619e9;
  Ceiling launch;
  launch.name = "launch_async";
  launch.kind = CeilingKind::latency;
  launch.unit = "s";
  launch.measured = 2.6e-6;
  launch.repeats = 1000;
  run.machine.ceilings = {fma, hbm, launch};
  run.machine.working_set = {{16384, 2.5e13}, {1.5e7, 1.1e13}, {4.0 * (1 << 30), 4.4e12}};
  run.machine.skipped = {{"tensor_fp8", "FP8 mma needs compute capability 8.9 (this GPU: 8.0)"},
                         {"h2d_pageable", "transfer roofs failed: out of memory", true}};
  return run;
}

Point conv_point() {
  Point point;
  point.sweep = "conv2d";
  point.seq = 0;
  point.op = "conv2d_fwd";
  point.params = {{"batch", 16},  {"alpha", 0.1}, {"tiny", 1e-300},   {"big", 1234567890123},
                  {"neg", -3},    {"half", 0.5},  {"layout", "nhwc"}, {"dims", {3, 3, 64}},
                  {"flag", true}, {"one", 1.0},   {"third", 1.0 / 3}};
  point.precision = "fp16";
  point.math_mode = "tensor_op";
  point.algorithm = "IMPLICIT_PRECOMP_GEMM";
  point.flops = 2.0 * 16 * 64 * 64 * 56 * 56 * 9;
  point.min_bytes = 12845056;
  point.status = PointStatus::ok;
  point.reason = "";
  Timing& t = point.timing;
  t.call = TimeStats{.median_s = 1.25e-4,
                     .ci_low_s = 1.24e-4,
                     .ci_high_s = 1.26e-4,
                     .spread = 0.031,
                     .min_s = 1.2e-4,
                     .max_s = 1.4e-4,
                     .samples = 50,
                     .calls_per_sample = 1,
                     .converged = true};
  t.stream = TimeStats{.median_s = 1.0e-4, .samples = 30, .calls_per_sample = 8};
  t.graph_unavailable = "capture failed: operation not permitted when stream is capturing";
  t.kernel_time_s = 9.5e-5;
  t.launches = 3;
  t.api_time_s = 1.1e-5;
  t.launch_gap_s = 2.0e-6;
  t.h2d_bytes = 0.0;
  t.h2d_time_s = std::nullopt;
  t.d2h_bytes = 4096;
  t.d2h_time_s = 3.3e-6;
  point.counters = {{"flops_tensor_fp16", 1.8e9}, {"hbm_bytes", 1.3e7}, {"l2_bytes", 4.4e7}};
  KernelRecord main_kernel;
  main_kernel.name = "void cudnn::conv<__half, 3>(Params<T>&, int) && <lambda>&";
  main_kernel.grid = {112, 2, 1};
  main_kernel.block = {256, 1, 1};
  main_kernel.duration_s = 8.1e-5;
  main_kernel.metrics = {{"dram__bytes_read.sum", 1.2e7},
                         {"sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum", 1.8e9}};
  KernelRecord helper;
  helper.name = "nchwToNhwcKernel";
  helper.grid = {64, 1, 1};
  helper.block = {32, 8, 1};
  helper.duration_s = 7e-6;
  point.kernels = {main_kernel, helper};
  return point;
}

Point failed_point() {
  Point point;
  point.sweep = "conv2d";
  point.seq = 1;
  point.op = "conv2d_fwd";
  point.params = json::object();
  point.precision = "fp32";
  point.math_mode = "default";
  point.algorithm = "";
  point.flops = 1e18;
  point.min_bytes = 5e11;
  point.status = PointStatus::out_of_memory;
  point.reason = "CUDNN_STATUS_ALLOC_FAILED: <workspace> & output > 140 GiB";
  return point;  // timing all empty, no counters, no kernels
}

Point lstm_point() {
  Point point = conv_point();
  point.sweep = "lstm";
  point.seq = 0;
  point.op = "lstm_train";
  point.params = {{"batch", 32}, {"steps", 16}, {"hidden", 16}};
  point.status = PointStatus::counters_unavailable;
  point.reason = "counters need admin";
  point.counters.clear();
  point.kernels.resize(1);
  point.kernels[0].metrics.clear();
  return point;
}

// The point the killed writer stores at `seq`: deterministic, so it can be checked.
Point numbered_point(int seq) {
  Point point = conv_point();
  point.seq = seq;
  point.params["batch"] = seq + 1;
  point.flops = 1000.0 * (seq + 1) + 0.1;
  point.kernels.push_back(point.kernels[0]);
  point.kernels.back().name = "kernel_" + std::to_string(seq) + "<float>";
  point.kernels.back().metrics["seq"] = seq;
  return point;
}

// A run with its points as a writer builds them; ids are filled in by store().
RunRecord sample_record(const std::string& uuid) {
  return RunRecord{sample_run(uuid), {conv_point(), failed_point(), lstm_point()}};
}

// Stores the record the way a measuring run does: the run, then point by point.
void store_record(ResultsStore& store, RunRecord& record) {
  store.begin_run(record.run);
  for (Point& point : record.points) store.add_point(record.run.id, point);
}

RunRecord without_ids(RunRecord record) {
  record.run.id = 0;
  for (Point& point : record.points) point.id = 0;
  return record;
}

std::vector<RunRecord> without_ids(std::vector<RunRecord> records) {
  for (RunRecord& record : records) record = without_ids(record);
  return records;
}

constexpr const char* kUuidA = "a1b2c3d4-0000-4000-8000-000000000001";
constexpr const char* kUuidB = "b1b2c3d4-0000-4000-8000-000000000002";

// Inside TEST_F bodies `Run` names testing::Test::Run, hence timeroof::Run there.

// ---- Round trips ----

TEST_F(StoreTest, StoredRunLoadsBackEqual) {
  ResultsStore store = ResultsStore::open(file("results.db"), Access::read_write);
  RunRecord record = sample_record(kUuidA);
  store_record(store, record);
  EXPECT_GT(record.run.id, 0);
  for (const Point& point : record.points) EXPECT_GT(point.id, 0);

  const RunRecord loaded = store.load_run(record.run.id);
  EXPECT_EQ(loaded, record);
  // Field by field for a readable failure where operator== alone would not say what.
  EXPECT_EQ(loaded.run.machine, record.run.machine);
  ASSERT_EQ(loaded.points.size(), 3u);
  EXPECT_EQ(loaded.points[0].params, record.points[0].params);
  EXPECT_EQ(loaded.points[0].kernels, record.points[0].kernels);
  EXPECT_EQ(loaded.points[0].kernels[0].name,
            "void cudnn::conv<__half, 3>(Params<T>&, int) && <lambda>&");
  EXPECT_EQ(loaded.points[0].params["tiny"].get<double>(), 1e-300);
  EXPECT_EQ(loaded.points[0].params["third"].get<double>(), 1.0 / 3);
  EXPECT_TRUE(loaded.points[0].params["batch"].is_number_integer());
  EXPECT_FALSE(loaded.points[1].timing.call.has_value());
  EXPECT_EQ(loaded.points[1].reason, "CUDNN_STATUS_ALLOC_FAILED: <workspace> & output > 140 GiB");

  const std::vector<RunRecord> all = store.load_all();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0], record);
}

TEST_F(StoreTest, ExportImportExportIsIdentical) {
  const std::string first_path = file("first.db");
  ResultsStore first = ResultsStore::open(first_path, Access::read_write);
  RunRecord a = sample_record(kUuidA);
  RunRecord b = sample_record(kUuidB);
  b.run.status = "complete";
  b.run.finished_at = "2025-01-02T04:00:00.000Z";
  b.run.machine.ceilings.clear();
  b.points.pop_back();
  store_record(first, a);
  store_record(first, b);

  const std::string exported = export_document(first.load_all()).dump(2);
  EXPECT_TRUE(Contains(exported, "1e-300"));
  EXPECT_TRUE(Contains(exported, "\"alpha\": 0.1"));
  EXPECT_TRUE(Contains(exported, "conv<__half, 3>(Params<T>&, int) && <lambda>&"));
  EXPECT_TRUE(Contains(exported, "\"batch\": 16"));  // an integer stays an integer

  const std::vector<RunRecord> parsed = parse_export_document(json::parse(exported), "test");
  EXPECT_EQ(parsed, without_ids({a, b}));

  ResultsStore second = ResultsStore::open(file("second.db"), Access::read_write);
  second.import_runs(parsed);
  const std::vector<RunRecord> imported = second.load_all();
  EXPECT_EQ(without_ids(imported), without_ids({a, b}));
  EXPECT_EQ(export_document(imported).dump(2), exported);
}

TEST_F(StoreTest, UpdateRunAndCeilings) {
  ResultsStore store = ResultsStore::open(file("results.db"), Access::read_write);
  RunRecord record = sample_record(kUuidA);
  store_record(store, record);

  record.run.status = "partial";
  record.run.finished_at = "2025-01-02T05:06:07.000Z";
  record.run.spec["extra"] = 2.5;
  record.run.machine.gpu.sm_clock_base_hz = 1.59e9;
  store.update_run(record.run);
  EXPECT_EQ(store.load_run(record.run.id), record);

  Ceiling shared = record.run.machine.ceilings[1];
  shared.name = "shared";
  store.add_ceiling(record.run.id, shared);
  record.run.machine.ceilings.push_back(shared);
  EXPECT_EQ(store.load_run(record.run.id).run.machine.ceilings, record.run.machine.ceilings);

  const std::vector<Ceiling> replaced = {shared, record.run.machine.ceilings[0]};
  store.set_ceilings(record.run.id, replaced);
  EXPECT_EQ(store.load_run(record.run.id).run.machine.ceilings, replaced);

  const std::vector<timeroof::Run> runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "partial");
  EXPECT_EQ(runs[0].machine.ceilings, replaced);

  // The whole machine at once: ceilings, working-set curve and skipped roofs.
  Machine measured = record.run.machine;
  measured.ceilings = {record.run.machine.ceilings[2]};
  measured.working_set = {{1024, 1e12}};
  measured.skipped.clear();
  store.set_machine_measurements(record.run.id, measured);
  const Machine loaded = store.load_run(record.run.id).run.machine;
  EXPECT_EQ(loaded.ceilings, measured.ceilings);
  EXPECT_EQ(loaded.working_set, measured.working_set);
  EXPECT_TRUE(loaded.skipped.empty());

  timeroof::Run unknown = record.run;
  unknown.id = 999;
  EXPECT_TRUE(Contains(error_of([&] { store.update_run(unknown); }), "no run with id 999"));
  EXPECT_TRUE(Contains(error_of([&] { store.add_ceiling(999, shared); }), "no run with id 999"));
}

// A store of schema 1 (before the power columns) reads as it is, read-only too;
// the first write of a ceiling adds the columns inside its own transaction, so
// a write that fails leaves schema 1 behind, byte for byte.
TEST_F(StoreTest, SchemaOneStoreIsReadAndUpgradedOnlyByASuccessfulWrite) {
  const std::string path = file("schema1.db");
  timeroof::Run run = sample_run(kUuidA);
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    store.begin_run(run);
  }
  raw_exec(path,
           "ALTER TABLE ceilings DROP COLUMN power_json; ALTER TABLE ceilings DROP COLUMN "
           "sustained_json; ALTER TABLE runs DROP COLUMN writer_json; PRAGMA user_version = 1; "
           "PRAGMA journal_mode = DELETE;");
  const std::string before = read_bytes(path);
  {
    ResultsStore store = ResultsStore::open(path, Access::read_only);
    const RunRecord read = store.load_run(run.id);
    ASSERT_EQ(read.run.machine.ceilings.size(), run.machine.ceilings.size());
    EXPECT_EQ(read.run.machine.ceilings[0].power, PowerConditions{});
    EXPECT_FALSE(read.run.machine.ceilings[0].sustained);
    EXPECT_EQ(read.run.machine.ceilings[0].measured, run.machine.ceilings[0].measured);
  }
  EXPECT_EQ(read_bytes(path), before);
  {
    // The first record's ceilings upgrade the schema, the second is refused
    // (already stored): the import, upgrade included, is rolled back.
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    RunRecord fresh, duplicate;
    fresh.run = sample_run(kUuidB);
    duplicate.run = sample_run(kUuidA);
    EXPECT_TRUE(Contains(error_of([&] {
                           store.import_runs({fresh, duplicate});
                         }),
                         "already stored"));
  }
  EXPECT_EQ(raw_query_text(path, "PRAGMA user_version"), "1");
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    store.add_ceiling(run.id, run.machine.ceilings[0]);
    const RunRecord read = store.load_run(run.id);
    EXPECT_EQ(read.run.machine.ceilings.back(), run.machine.ceilings[0]);
    EXPECT_EQ(read.run.machine.ceilings.front().power, PowerConditions{});  // old rows: empty
  }
  EXPECT_EQ(raw_query_text(path, "PRAGMA user_version"), std::to_string(kStoreSchemaVersion));
  {
    // A new run into a schema-1 store upgrades it as it inserts the run's roofs.
    const std::string copy = file("schema1-copy.db");
    { std::ofstream(copy, std::ios::binary) << before; }
    ResultsStore store = ResultsStore::open(copy, Access::read_write);
    timeroof::Run second = sample_run(kUuidB);
    store.begin_run(second);
    EXPECT_EQ(store.load_run(second.id).run.machine.ceilings, second.machine.ceilings);
  }
}

TEST_F(StoreTest, SchemaPragmasAndNumericColumns) {
  const std::string path = file("results.db");
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    RunRecord record = sample_record(kUuidA);
    store_record(store, record);
  }
  EXPECT_EQ(raw_query_text(path, "PRAGMA application_id"), std::to_string(0x54524F46));
  EXPECT_EQ(raw_query_text(path, "PRAGMA user_version"), std::to_string(kStoreSchemaVersion));
  EXPECT_EQ(raw_query_text(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw_query_text(path, "SELECT typeof(flops) FROM points WHERE seq = 0 LIMIT 1"), "real");
  EXPECT_EQ(raw_query_text(path, "SELECT typeof(theoretical) FROM ceilings WHERE seq = 1"), "null");
  EXPECT_EQ(raw_query_text(path, "SELECT count(*) FROM kernels"), "3");
}

// A FIFO as --db would block the first read forever (issue 16): refused at once,
// for reading and writing, and left as it was.
TEST_F(StoreTest, AFifoOrDeviceIsRefusedWithoutBlocking) {
  const std::string fifo = file("pipe.db");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const Access access : {Access::read_only, Access::read_write})
    EXPECT_TRUE(Contains(error_of([&] { ResultsStore::open(fifo, access); }, ExitCode::usage),
                         "not a regular file"));
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(Contains(
      error_of([&] { ResultsStore::open("/dev/null", Access::read_write); }, ExitCode::usage),
      "not a regular file"));
}

// Read commands leave nothing beside a store they only read, and read it from a
// directory they cannot write (issue 16: "attempt to write a readonly database").
TEST_F(StoreTest, ReadingLeavesNoSideFilesAndNeedsNoWritableDirectory) {
  const fs::path sub = dir_ / "odd dir?#%";  // a path that needs escaping in a URI
  fs::create_directories(sub);
  const std::string path = (sub / "results.db").string();
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    RunRecord record = sample_record(kUuidA);
    store_record(store, record);
  }
  ASSERT_FALSE(has_side_files(path));
  fs::permissions(sub, fs::perms::owner_read | fs::perms::owner_exec);
  {
    ResultsStore reader = ResultsStore::open(path, Access::read_only);
    EXPECT_EQ(reader.list_runs().size(), 1u);
    EXPECT_EQ(reader.load_run(reader.list_runs().front().id).run.uuid, kUuidA);
    EXPECT_FALSE(has_side_files(path));
  }
  EXPECT_FALSE(has_side_files(path));
  fs::permissions(sub, fs::perms::owner_all);
}

// A reader that outlives a writer closes last, and the last connection removes
// the -wal and -shm the writer made: a read-only one could not, and left them
// (CI: a read command beside an import that failed).
TEST_F(StoreTest, AReaderThatOutlivesTheWriterLeavesNoSideFiles) {
  const std::string path = file("shared.db");
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    RunRecord record = sample_record(kUuidA);
    store_record(store, record);
  }
  std::optional<ResultsStore> writer = ResultsStore::open(path, Access::read_write);
  writer->list_runs();  // its first read of the WAL store makes the -wal and -shm
  ASSERT_TRUE(has_side_files(path));
  {
    ResultsStore reader = ResultsStore::open(path, Access::read_only);
    writer.reset();
    EXPECT_EQ(reader.list_runs().size(), 1u);
  }
  EXPECT_FALSE(has_side_files(path));
}

// A store a writing command would refuse is refused before that command opens
// it for writing, so the refusal leaves nothing beside it.
TEST_F(StoreTest, AStoreRefusedForWritingGetsNoSideFiles) {
  const std::string path = file("damaged.db");
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    RunRecord record = sample_record(kUuidA);
    store_record(store, record);
  }
  raw_exec(path, "DROP TABLE kernels; DROP TABLE points");
  ASSERT_FALSE(has_side_files(path));
  EXPECT_TRUE(Contains(
      error_of([&] { ResultsStore::open(path, Access::read_write); }, ExitCode::usage), "points"));
  EXPECT_FALSE(has_side_files(path));
}

TEST_F(StoreTest, EmptyFileGetsSchemaAndReadOnlySeesIt) {
  const std::string path = file("empty.db");
  write_bytes(path, "");
  ResultsStore::open(path, Access::read_write);
  ResultsStore reader = ResultsStore::open(path, Access::read_only);
  EXPECT_TRUE(reader.list_runs().empty());
  // A read-only file or connection is the user's to fix (exit 1), with what to do.
  timeroof::Run run = sample_run(kUuidA);
  const std::string refused = error_of([&] { reader.begin_run(run); }, ExitCode::usage);
  EXPECT_TRUE(Contains(refused, "readonly"));
  EXPECT_TRUE(Contains(refused, "make the file and its directory writable"));
  EXPECT_FALSE(Contains(refused, "sqlite3_")) << "no call names for a user's error";
}

TEST_F(StoreTest, ResumeKeysAndDuplicatePoints) {
  ResultsStore store = ResultsStore::open(file("results.db"), Access::read_write);
  RunRecord record = sample_record(kUuidA);
  store_record(store, record);
  EXPECT_EQ(store.finished_point_seqs(record.run.id, "conv2d"), (std::set<int>{0, 1}));
  EXPECT_EQ(store.finished_point_seqs(record.run.id, "lstm"), (std::set<int>{0}));
  EXPECT_TRUE(store.finished_point_seqs(record.run.id, "gemm").empty());

  Point again = conv_point();
  EXPECT_TRUE(Contains(error_of([&] { store.add_point(record.run.id, again); }),
                       "conv2d#0 is already stored"));
  EXPECT_EQ(again.id, 0);
  EXPECT_EQ(store.load_run(record.run.id), record);
}

TEST_F(StoreTest, NonFiniteValuesAreRejectedBeforeWriting) {
  ResultsStore store = ResultsStore::open(file("results.db"), Access::read_write);
  timeroof::Run run = sample_run(kUuidA);
  store.begin_run(run);

  Point nan_timing = conv_point();
  nan_timing.timing.call = TimeStats{.median_s = std::numeric_limits<double>::quiet_NaN()};
  EXPECT_TRUE(Contains(error_of([&] { store.add_point(run.id, nan_timing); }),
                       "timing.call.median_s is nan"));

  Point inf_metric = conv_point();
  inf_metric.kernels[1].metrics["x"] = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(Contains(error_of([&] { store.add_point(run.id, inf_metric); }),
                       "kernels[1].metrics.x is inf"));

  Point nan_param = conv_point();
  nan_param.params["dims"][1] = std::nan("");
  EXPECT_TRUE(Contains(error_of([&] { store.add_point(run.id, nan_param); }), "params.dims[1]"));

  Ceiling bad = run.machine.ceilings[0];
  bad.theoretical = -std::numeric_limits<double>::infinity();
  EXPECT_TRUE(Contains(error_of([&] { store.add_ceiling(run.id, bad); }), "theoretical is -inf"));

  timeroof::Run bad_run = sample_run(kUuidB);
  bad_run.machine.gpu.sm_clock_current_hz = std::nan("");
  EXPECT_TRUE(Contains(error_of([&] { store.begin_run(bad_run); }), "gpu.sm_clock_current_hz"));

  EXPECT_TRUE(store.finished_point_seqs(run.id, "conv2d").empty());
  const std::vector<RunRecord> all = store.load_all();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0], (RunRecord{run, {}}));
}

// ---- Looking runs up ----

TEST_F(StoreTest, LoadRunByIdUuidAndPrefix) {
  ResultsStore store = ResultsStore::open(file("results.db"), Access::read_write);
  timeroof::Run first = sample_run("abc00000-0000-4000-8000-000000000001");
  timeroof::Run second = sample_run("abc11111-0000-4000-8000-000000000002");
  timeroof::Run third = sample_run("99999999-0000-4000-8000-000000000003");
  store.begin_run(first);
  store.begin_run(second);
  store.begin_run(third);

  const std::string ambiguous = error_of([&] { store.load_run(std::string("abc")); });
  EXPECT_TRUE(Contains(ambiguous, "ambiguous"));
  EXPECT_TRUE(Contains(ambiguous, first.uuid));
  EXPECT_TRUE(Contains(ambiguous, second.uuid));

  ASSERT_TRUE(store.load_run(std::string("abc1")).has_value());
  EXPECT_EQ(store.load_run(std::string("abc1"))->run, second);
  EXPECT_EQ(store.load_run(first.uuid)->run, first);
  EXPECT_EQ(store.load_run(std::to_string(second.id))->run, second);
  EXPECT_EQ(store.load_run(std::string("9"))->run, third);  // no run 9: a uuid prefix
  EXPECT_FALSE(store.load_run(std::string("abd")).has_value());
  EXPECT_FALSE(store.load_run(std::string("12345")).has_value());
  EXPECT_TRUE(Contains(error_of([&] { store.load_run(std::int64_t{42}); }), "no run with id 42"));
}

// A failed import leaves the file byte-identical, also a store in rollback-
// journal mode (it once rewrote the header to WAL while saying nothing was
// written); a store whose data pages are garbage takes no import (issue 16).
TEST_F(StoreTest, AFailedImportLeavesTheFileAsItWas) {
  const std::string path = file("rollback.db");
  const RunRecord a = without_ids(sample_record(kUuidA));
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    store.import_runs({a});
  }
  raw_exec(path, "PRAGMA journal_mode = DELETE");
  ASSERT_EQ(raw_query_text(path, "PRAGMA journal_mode"), "delete");
  const std::string before = read_bytes(path);
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    EXPECT_TRUE(Contains(error_of([&] { store.import_runs({a}); }), "already stored"));
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(raw_query_text(path, "PRAGMA journal_mode"), "delete");

  // Garbage over the data pages (the header and schema page kept).
  std::string damaged = before;
  const std::size_t page = 4096;
  ASSERT_GT(damaged.size(), 3 * page);
  for (std::size_t at = 2 * page; at < damaged.size(); ++at)
    damaged[at] = static_cast<char>(at * 7919u);
  write_bytes(path, damaged);
  const RunRecord b = without_ids(sample_record(kUuidB));
  const std::string message = error_of([&] {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    store.import_runs({b});
  });
  EXPECT_TRUE(Contains(message, "damaged")) << message;
  EXPECT_TRUE(Contains(message, "nothing was imported")) << message;
  EXPECT_EQ(read_bytes(path), damaged);
}

TEST_F(StoreTest, DuplicateImportChangesNothing) {
  ResultsStore store = ResultsStore::open(file("results.db"), Access::read_write);
  const RunRecord a = without_ids(sample_record(kUuidA));
  store.import_runs({a});
  const std::vector<RunRecord> before = store.load_all();
  ASSERT_EQ(before.size(), 1u);

  const RunRecord b = without_ids(sample_record(kUuidB));
  const std::string message = error_of([&] { store.import_runs({b, a}); });
  EXPECT_TRUE(Contains(message, kUuidA));
  EXPECT_TRUE(Contains(message, "already stored"));
  EXPECT_EQ(store.load_all(), before);  // b was not imported either

  // The same uuid twice within one import is refused the same way.
  EXPECT_TRUE(Contains(error_of([&] { store.import_runs({b, b}); }), kUuidB));
  EXPECT_EQ(store.load_all(), before);

  timeroof::Run again = sample_run(kUuidA);
  EXPECT_TRUE(Contains(error_of([&] { store.begin_run(again); }), "already stored"));
  EXPECT_EQ(again.id, 0);
}

// ---- Files that are not ours are never touched ----

TEST_F(StoreTest, NewerSchemaIsRefusedAndFileUnchanged) {
  const std::string path = file("newer.db");
  {
    ResultsStore store = ResultsStore::open(path, Access::read_write);
    timeroof::Run run = sample_run(kUuidA);
    store.begin_run(run);
  }
  raw_exec(path, "PRAGMA user_version = " + std::to_string(kStoreSchemaVersion + 1));
  const std::string before = read_bytes(path);
  ASSERT_FALSE(before.empty());

  for (Access access : {Access::read_write, Access::read_only}) {
    const std::string message = error_of([&] { ResultsStore::open(path, access); });
    EXPECT_TRUE(Contains(message, "newer"));
    EXPECT_TRUE(Contains(message, path));
    EXPECT_TRUE(Contains(message, "schema " + std::to_string(kStoreSchemaVersion + 1) + " > " +
                                      std::to_string(kStoreSchemaVersion)));
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(has_side_files(path));
}

TEST_F(StoreTest, ForeignSqliteFileIsRefusedAndFileUnchanged) {
  const std::string with_tables = file("notes.db");
  raw_exec(with_tables, "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('keep me');");
  const std::string other_app = file("other_app.db");
  raw_exec(other_app, "PRAGMA application_id = 1234");

  for (const std::string& path : {with_tables, other_app}) {
    const std::string before = read_bytes(path);
    ASSERT_FALSE(before.empty()) << path;
    for (Access access : {Access::read_write, Access::read_only}) {
      const std::string message = error_of([&] { ResultsStore::open(path, access); });
      EXPECT_TRUE(Contains(message, "foreign SQLite file, not written by timeroof"));
      EXPECT_TRUE(Contains(message, path));
    }
    EXPECT_EQ(read_bytes(path), before) << path;
    EXPECT_FALSE(has_side_files(path)) << path;
  }
  EXPECT_EQ(raw_query_text(with_tables, "PRAGMA journal_mode"), "delete");
}

TEST_F(StoreTest, CorruptFilesAreRefusedAndFileUnchanged) {
  std::mt19937 random(7);
  std::string garbage(4096, '\0');
  for (char& c : garbage) c = static_cast<char>(random());
  std::string fake_sqlite = garbage;
  fake_sqlite.replace(0, 16, std::string("SQLite format 3\0", 16));

  const std::vector<std::pair<std::string, std::string>> files = {
      {file("garbage.db"), garbage},
      {file("notes.txt"), "these are my notes, not a database\n"},
      {file("fake.db"), fake_sqlite},
  };
  for (const auto& [path, bytes] : files) {
    write_bytes(path, bytes);
    for (Access access : {Access::read_write, Access::read_only}) {
      // clang 14 (the sanitizer build) cannot capture a structured binding.
      const std::string message =
          error_of([&, &store_path = path] { ResultsStore::open(store_path, access); });
      EXPECT_TRUE(Contains(message, "not a timeroof results database"));
      EXPECT_TRUE(Contains(message, path));
      EXPECT_TRUE(Contains(message, "--db"));
    }
    EXPECT_EQ(read_bytes(path), bytes) << path;
    EXPECT_FALSE(has_side_files(path)) << path;
  }

  const std::string message =
      error_of([&] { ResultsStore::open(dir_.string(), Access::read_write); });
  EXPECT_TRUE(Contains(message, "is a directory"));
}

TEST_F(StoreTest, ReadOnlyNeverCreatesAFile) {
  const std::string path = file("missing.db");
  const std::string message = error_of([&] { ResultsStore::open(path, Access::read_only); });
  EXPECT_TRUE(Contains(message, path));
  EXPECT_TRUE(Contains(message, "timeroof run"));
  EXPECT_TRUE(Contains(message, "--db"));
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(has_side_files(path));

  const std::string empty = file("empty.db");
  write_bytes(empty, "");
  EXPECT_TRUE(Contains(error_of([&] { ResultsStore::open(empty, Access::read_only); }),
                       "no timeroof results"));
  EXPECT_EQ(fs::file_size(empty), 0u);
}

// ---- Durability ----

TEST_F(StoreTest, KilledWriterKeepsEveryReportedPoint) {
  const std::string path = file("killed.db");
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child only writes points; no gtest code runs here and _exit skips the
    // parent's atexit handlers and buffered output.
    close(pipe_fds[0]);
    int code = 0;
    try {
      ResultsStore store = ResultsStore::open(path, Access::read_write);
      timeroof::Run run = sample_run(kUuidA);
      store.begin_run(run);
      for (int seq = 0;; ++seq) {
        Point point = numbered_point(seq);
        store.add_point(run.id, point);
        if (write(pipe_fds[1], &seq, sizeof seq) != static_cast<ssize_t>(sizeof seq)) {
          code = 2;
          break;
        }
      }
    } catch (...) {
      code = 3;
    }
    _exit(code);
  }
  close(pipe_fds[1]);

  int last_reported = -1;
  while (last_reported < 19) {
    pollfd ready{pipe_fds[0], POLLIN, 0};
    if (poll(&ready, 1, 30000) <= 0) break;
    int seq = -1;
    if (read(pipe_fds[0], &seq, sizeof seq) != static_cast<ssize_t>(sizeof seq)) break;
    EXPECT_EQ(seq, last_reported + 1);
    last_reported = seq;
  }
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  close(pipe_fds[0]);
  ASSERT_GE(last_reported, 19) << "the writer reported fewer than 20 commits (exit status "
                               << status << ")";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

  const auto check_points = [&](ResultsStore& store) {
    const std::vector<RunRecord> all = store.load_all();
    ASSERT_EQ(all.size(), 1u);
    const std::vector<Point>& points = all[0].points;
    // Every reported commit is there; the writer may have committed a few more.
    ASSERT_GE(points.size(), static_cast<std::size_t>(last_reported + 1));
    for (std::size_t i = 0; i < points.size(); ++i) {
      Point expected = numbered_point(static_cast<int>(i));
      expected.id = points[i].id;
      EXPECT_EQ(points[i], expected) << "point " << i;
      EXPECT_EQ(points[i].kernels.size(), 3u);
    }
  };
  {
    ResultsStore reader = ResultsStore::open(path, Access::read_only);
    check_points(reader);
  }
  // --resume: reopen for writing, see what is finished and continue.
  ResultsStore writer = ResultsStore::open(path, Access::read_write);
  check_points(writer);
  const std::int64_t run_id = writer.list_runs().at(0).id;
  const std::set<int> finished = writer.finished_point_seqs(run_id, "conv2d");
  ASSERT_FALSE(finished.empty());
  EXPECT_EQ(*finished.begin(), 0);
  EXPECT_EQ(static_cast<std::size_t>(*finished.rbegin()) + 1, finished.size());
  Point next = numbered_point(*finished.rbegin() + 1);
  writer.add_point(run_id, next);
  EXPECT_EQ(writer.finished_point_seqs(run_id, "conv2d").size(), finished.size() + 1);
}

}  // namespace
}  // namespace timeroof
