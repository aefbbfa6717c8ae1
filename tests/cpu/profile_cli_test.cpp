// `timeroof profile` on any machine (issue 17): the usage errors, the exit code
// and status of the program passed through, and the whole ingest path, driven
// by a shell "program" that writes a journal the way the injection library
// does (no GPU needed). tests/gpu/profile_test.cpp traces a real CUDA program.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace_events.hpp"
#include "src/store/results_store.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

using test::run_tool;
using test::TempDir;

constexpr int kLimitSeconds = 60;

// Every profile here runs with a stand-in injection library, so the tests
// need no CUDA build; ProfileCli.FindsTheBuiltInjectionLibrary checks the real one.
class ProfileCli : public ::testing::Test {
 protected:
  void SetUp() override { test::write_file(stand_in_, ""); }
  test::ToolResult profile(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"profile", "--db", db_};
    all.insert(all.end(), args.begin(), args.end());
    return run_tool(all, {{"TIMEROOF_INJECT_LIBRARY", stand_in_}}, kLimitSeconds);
  }
  // Each (arguments, message) a one-line usage error naming the message, before any run.
  void expect_usage_errors(
      const std::vector<std::pair<std::vector<std::string>, std::string>>& cases) {
    for (const auto& [args, message] : cases) {
      const auto result = profile(args);
      EXPECT_EQ(result.exit_code, 1) << result.err;
      EXPECT_EQ(test::count_lines(result.err), 1) << result.err;
      EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    }
    EXPECT_FALSE(std::filesystem::exists(db_));
  }
  RunRecord only_run() {
    ResultsStore store = ResultsStore::open(db_, ResultsStore::Access::read_only);
    std::vector<RunRecord> runs = store.load_all();
    EXPECT_EQ(runs.size(), 1U);
    return runs.empty() ? RunRecord{} : runs.front();
  }

  TempDir dir_;
  std::string db_ = dir_.file("profile.db");
  std::string stand_in_ = dir_.file("libstand_in.so");
};

int count_lines(const std::string& text) {
  return test::count_lines(text);
}

TEST_F(ProfileCli, NeedsTheProgramAfterTheSeparator) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, std::vector<std::string>{"true"},
        std::vector<std::string>{"--"}}) {
    const auto result = profile(args);
    EXPECT_EQ(result.exit_code, 1) << result.err;
    EXPECT_EQ(count_lines(result.err), 1) << result.err;
    EXPECT_NE(result.err.find("after --"), std::string::npos) << result.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db_));  // nothing stored
}

TEST_F(ProfileCli, ProgramNotFoundIsAUsageErrorBeforeAnyRun) {
  auto result = profile({"--", "timeroof-no-such-program"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_EQ(count_lines(result.err), 1) << result.err;
  EXPECT_NE(result.err.find("not found on PATH"), std::string::npos) << result.err;
  result = profile({"--", dir_.file("missing-app")});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("no such executable file"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(db_));
}

TEST_F(ProfileCli, BadCounterSelectionIsAUsageErrorBeforeAnyRun) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--kernels", "gemm(", "--", "true"}, "--kernels 'gemm(' is not a regular expression"},
      {{"--nvtx", "[layer", "--", "true"}, "--nvtx '[layer' is not a regular expression"},
      {{"--count", "0", "--", "true"}, "--count 0 measures nothing"},
      {{"--metrics", "dram bytes", "--", "true"}, "--metrics"},
      {{"--no-counters", "--metrics", "dram__bytes_read.sum", "--", "true"}, "--no-counters"},
      {{"--no-counters", "--every", "--", "true"}, "--every"},
      {{"--iteration-range", "(step", "--", "true"},
       "--iteration-range '(step' is not a regular expression"},
      {{"--iteration-range", "step", "--every", "--", "true"}, "--every"},
      {{"--iteration-range", "step", "--kernels", "gemm", "--", "true"}, "--kernels"},
      {{"--iteration-range", "step", "--count", "3", "--", "true"}, "--count"},
      {{"--no-counters", "--iteration-range", "step", "--", "true"}, "--no-counters"},
      {{"--iteration-range", "step", "--", "true"}, "--iteration-range needs --skip 1 or more"},
  };
  expect_usage_errors(cases);
}

// Iteration replay reaches the program through the environment, with --skip
// counting instances, and the run's spec keeps it.
TEST_F(ProfileCli, IterationRangeIsPassedAndRecorded) {
  const auto result =
      profile({"--iteration-range", "^step$", "--skip", "2", "--", "sh", "-c",
               "echo \"$TIMEROOF_PROFILE_ITERATION_RANGE|$TIMEROOF_PROFILE_SKIP\""});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "^step$|2\n");
  const nlohmann::json counters = only_run().run.spec["profile"]["counters"];
  EXPECT_EQ(counters["iteration_range"], "^step$");
  EXPECT_EQ(counters["skip"], 2);
}

// The selection reaches the program through the environment and the run's spec.
TEST_F(ProfileCli, CounterSelectionIsPassedAndRecorded) {
  const auto result =
      profile({"--kernels", "gemm|conv", "--skip", "5", "--count", "7", "--every", "--metrics",
               "sm__cycles_elapsed.avg, dram__bytes_read.sum", "--", "sh", "-c",
               "echo \"$TIMEROOF_PROFILE_COUNTERS|$TIMEROOF_PROFILE_KERNELS|$TIMEROOF_PROFILE_NVTX|"
               "$TIMEROOF_PROFILE_SKIP|$TIMEROOF_PROFILE_COUNT|$TIMEROOF_PROFILE_EVERY|"
               "$TIMEROOF_PROFILE_METRICS\""});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "1|gemm|conv||5|7|1|sm__cycles_elapsed.avg,dram__bytes_read.sum\n");
  const nlohmann::json counters = only_run().run.spec["profile"]["counters"];
  EXPECT_EQ(counters,
            (nlohmann::json{{"enabled", true},
                            {"kernels", "gemm|conv"},
                            {"nvtx", ""},
                            {"skip", 5},
                            {"count", 7},
                            {"every", true},
                            {"metrics", {"sm__cycles_elapsed.avg", "dram__bytes_read.sum"}}}));
}

TEST_F(ProfileCli, NoCountersTurnsThemOff) {
  const auto result =
      profile({"--no-counters", "--", "sh", "-c", "echo $TIMEROOF_PROFILE_COUNTERS"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "0\n");
  EXPECT_EQ(only_run().run.spec["profile"]["counters"], (nlohmann::json{{"enabled", false}}));
}

TEST_F(ProfileCli, BadApiChoiceIsAUsageErrorBeforeAnyRun) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--api", "everything", "--", "true"},
       "--api: unknown value 'everything'; allowed: none, launches, runtime, driver, all"},
      {{"--api", "", "--", "true"}, "--api: unknown value ''"},
      // Counters are tied to their kernels through the launch calls.
      {{"--api", "none", "--", "true"}, "--api none leaves kernel counters nothing"},
  };
  expect_usage_errors(cases);
}

// The choice reaches the injection library through the environment and is kept
// in the run's spec, for the analysis; launches by default.
TEST_F(ProfileCli, ApiChoiceIsPassedAndRecorded) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "launches"},
      {{"--api", "none", "--no-counters"}, "none"},
      {{"--api", "runtime"}, "runtime"},
      {{"--api", "driver"}, "driver"},
      {{"--api", "all"}, "all"},
  };
  for (const auto& [options, api] : cases) {
    std::filesystem::remove(db_);
    std::vector<std::string> args = options;
    for (const char* a : {"--", "sh", "-c", "echo $TIMEROOF_PROFILE_API"}) args.push_back(a);
    const auto result = profile(args);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, api + "\n");
    const RunRecord run = only_run();
    EXPECT_EQ(run.run.spec["profile"]["api"], api);
    EXPECT_EQ(run.run.spec["profile"]["environment"]["TIMEROOF_PROFILE_API"], api);
  }
}

// A profile stored with --api none reads "not traced" in every output, JSON null.
TEST_F(ProfileCli, AnalyzeAProfileWithoutApiCallsSaysNotTraced) {
  const std::string fixture = test::source_dir() + "/tests/fixtures/profile-synthetic.jsonl";
  const std::string script =
      "grep -v -e '^#' -e '\"kind\":\"runtime_api\"' -e "
      "'\"kind\":\"driver_api\"' -e '\"kind\":\"sync\"' '" +
      fixture + "' > \"$TIMEROOF_PROFILE_DIR/journal-$$.jsonl\"";
  ASSERT_EQ(profile({"--api", "none", "--no-counters", "--", "sh", "-c", script}).exit_code, 0);
  const auto text = run_tool({"analyze", "--db", db_});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Host API calls were not traced (profile --api none)"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("not traced    225 us"), std::string::npos) << text.out;
  const auto json_out = run_tool({"analyze", "--db", db_, "--format", "json"});
  ASSERT_EQ(json_out.exit_code, 0) << json_out.err;
  const nlohmann::json doc = nlohmann::json::parse(json_out.out);
  const nlohmann::json& run =
      doc.contains("profiles") ? doc["profiles"]["runs"][0] : doc["runs"][0];
  EXPECT_EQ(run["summary"]["api_traced"], "none");
  EXPECT_TRUE(run["api"].empty());
  const nlohmann::json& step = run["threads"][0]["ranges"][0];
  EXPECT_TRUE(step["api_s"].is_null());
  EXPECT_TRUE(step["kernels"].is_null());
  EXPECT_DOUBLE_EQ(step["gpu_idle_s"].get<double>(), 225e-6);
}

TEST_F(ProfileCli, HelpHasAnExample) {
  const auto result = run_tool({"profile", "--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("timeroof profile -- ./my_app"), std::string::npos) << result.out;
}

TEST_F(ProfileCli, ExitCodeAndOutputPassThrough) {
  const auto result = profile({"--", "sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_EQ(result.out, "out\n");
  EXPECT_NE(result.err.find("err\n"), std::string::npos);
  EXPECT_NE(result.err.find("recorded no CUDA activity"), std::string::npos) << result.err;
  const RunRecord run = only_run();
  EXPECT_EQ(run.run.status, "failed");
  EXPECT_EQ(run.run.spec["profile"]["exit"], (nlohmann::json{{"code", 3}}));
  EXPECT_EQ(run.run.spec["profile"]["command"],
            (nlohmann::json{"sh", "-c", "echo out; echo err >&2; exit 3"}));
  EXPECT_EQ(run.run.spec["profile"]["journal_format"], 1);
  EXPECT_EQ(run.run.spec["profile"]["environment"]["CUDA_INJECTION64_PATH"], stand_in_);
  EXPECT_FALSE(run.run.finished_at.empty());
  EXPECT_TRUE(run.trace.empty());
}

TEST_F(ProfileCli, KilledProgramIsFailedWithItsSignal) {
  const auto result = profile({"--", "sh", "-c", "kill -9 $$"});
  EXPECT_EQ(result.exit_code, 128 + 9) << result.err;
  const RunRecord run = only_run();
  EXPECT_EQ(run.run.status, "failed");
  EXPECT_EQ(run.run.spec["profile"]["exit"]["signal"], 9);
  EXPECT_EQ(run.run.spec["profile"]["exit"]["signal_name"], "KILL");
}

// The ingest path end to end: a "program" that writes a journal as the
// injection library does, with a garbage line and a cut-off last line.
TEST_F(ProfileCli, JournalLinesAreStoredAndBadOnesReported) {
  TraceEvent kernel;
  kernel.kind = TraceKind::kernel;
  kernel.name = "scale(float*, int)";
  kernel.start_ns = 100;
  kernel.end_ns = 200;
  kernel.bytes = 0;
  TraceEvent copy = kernel;
  copy.kind = TraceKind::memcpy;
  copy.name = "HtoD";
  copy.bytes = 4096;
  const std::string journal = nlohmann::json(kernel).dump() + "\n" + "garbage\n" +
                              nlohmann::json(copy).dump() + "\n" + "{\"kind\": \"ker";
  test::write_file(dir_.file("journal.txt"), journal);
  const std::string script =
      "cat '" + dir_.file("journal.txt") + "' > \"$TIMEROOF_PROFILE_DIR/journal-$$.jsonl\"";
  const auto result = profile({"--name", "fake", "--", "sh", "-c", script});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("skipped 1 journal line(s) that do not parse and 1 cut-off last line"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find(".jsonl:2"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("2 records (1 kernel, 1 memcpy)"), std::string::npos) << result.err;
  const RunRecord run = only_run();
  EXPECT_EQ(run.run.status, "complete");
  EXPECT_EQ(run.run.spec["profile"]["name"], "fake");
  EXPECT_EQ(run.run.spec["profile"]["records"], 2);
  EXPECT_EQ(run.run.spec["profile"]["skipped_lines"], 2);
  EXPECT_EQ(run.trace, (std::vector<TraceEvent>{kernel, copy}));
}

// A stored profile is read by the commands that read sweeps: `analyze` prints its
// tables, `report` its section, `export --perfetto` its trace (one profile run
// only; the store is never the output). The synthetic fixture's program.
TEST_F(ProfileCli, AnalyzeReportAndPerfettoReadTheStoredProfile) {
  const std::string fixture = test::source_dir() + "/tests/fixtures/profile-synthetic.jsonl";
  const std::string script =
      "grep -v '^#' '" + fixture + "' > \"$TIMEROOF_PROFILE_DIR/journal-$$.jsonl\"";
  ASSERT_EQ(profile({"--", "sh", "-c", script}).exit_code, 0);

  const auto analyzed = run_tool({"analyze", "--db", db_});
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  for (const char* text : {"Top kernels by total time", "gemm_kernel", "NVTX ranges of process",
                           "Where each iteration of step goes"})
    EXPECT_NE(analyzed.out.find(text), std::string::npos) << text << "\n" << analyzed.out;

  const std::string report = dir_.file("report");
  ASSERT_EQ(run_tool({"report", "--db", db_, "--out", report}).exit_code, 0);
  const std::string html = test::read_file(report + "/index.html");
  EXPECT_NE(html.find("gemm_kernel"), std::string::npos);
  EXPECT_NE(html.find("Where each iteration of step goes"), std::string::npos);

  const std::string trace = dir_.file("trace.json");
  const auto exported = run_tool({"export", "1", "--db", db_, "--perfetto", trace});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const nlohmann::json doc = nlohmann::json::parse(test::read_file(trace));
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
  EXPECT_EQ(doc["metadata"]["records"], 46);
  EXPECT_GT(doc["traceEvents"].size(), 46U);

  // The store itself is not an output, and a run without a trace has none to give.
  const auto onto_store = run_tool({"export", "--db", db_, "--perfetto", db_});
  EXPECT_EQ(onto_store.exit_code, 1);
  EXPECT_EQ(count_lines(onto_store.err), 1) << onto_store.err;
  EXPECT_NE(onto_store.err.find("--perfetto " + db_ + " is "), std::string::npos) << onto_store.err;
  const auto with_format =
      run_tool({"export", "--db", db_, "--perfetto", trace, "--format", "csv"});
  EXPECT_EQ(with_format.exit_code, 1) << with_format.err;
  const std::string empty = dir_.file("empty.db");
  ASSERT_EQ(run_tool({"import", "--db", empty, test::source_dir() + "/samples/sample-run.json.gz"})
                .exit_code,
            0);
  const auto no_trace = run_tool({"export", "--db", empty, "--perfetto", trace});
  EXPECT_EQ(no_trace.exit_code, 1);
  EXPECT_NE(no_trace.err.find("none of the runs named holds a trace"), std::string::npos)
      << no_trace.err;
}

// A trace with kernel counters, in a store with no ceilings (nor a GPU recorded for
// the run, on a machine without one): the model's numbers without roofs, and the
// fix named; the profile analysis as JSON and CSV; the Perfetto rates.
TEST_F(ProfileCli, AnalyzeAProfileWithCountersAsTextJsonAndCsv) {
  const std::string fixture = test::source_dir() + "/tests/fixtures/profile-counters.jsonl";
  const std::string script = "cat '" + fixture + "' > \"$TIMEROOF_PROFILE_DIR/journal-$$.jsonl\"";
  ASSERT_EQ(profile({"--", "sh", "-c", script}).exit_code, 0);

  const auto text = run_tool({"analyze", "1", "--db", db_});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* expected : {"Counters: 3 measured launches (1 tied to no kernel record",
                               "measure the roofs with `timeroof ceilings --db FILE`", "3 of 6"})
    EXPECT_NE(text.out.find(expected), std::string::npos) << expected << "\n" << text.out;

  const auto as_json = run_tool({"analyze", "1", "--db", db_, "--format", "json"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const nlohmann::json doc = nlohmann::json::parse(as_json.out);
  EXPECT_EQ(doc["format"], "timeroof-profile-analysis");
  const nlohmann::json& run = doc["runs"][0];
  EXPECT_EQ(run["counters"]["records"], 3);
  EXPECT_TRUE(run["roofs"].is_null());
  EXPECT_NE(run["roofs_note"].get<std::string>().find("timeroof ceilings --db FILE"),
            std::string::npos);
  const nlohmann::json& gemm = run["kernels"][0];
  EXPECT_EQ(gemm["name"], "gemm_kernel");
  EXPECT_EQ(gemm["model"]["launches_covered"], 3);
  EXPECT_NEAR(gemm["model"]["intensity_dram_flop_per_byte"].get<double>(), 49.5e9 / 180e6, 1e-9);
  EXPECT_TRUE(gemm["model"]["efficiency"].is_null());  // no roofs

  const auto as_csv = run_tool({"analyze", "1", "--db", db_, "--format", "csv"});
  ASSERT_EQ(as_csv.exit_code, 0) << as_csv.err;
  EXPECT_EQ(as_csv.out.substr(0, as_csv.out.find('\n')),
            "run_uuid,run_id,gpu_name,gpu_chip,gpu_uuid,kind,subject,process_id,thread_id,class,"
            "quantity,value");
  EXPECT_NE(as_csv.out.find(",range,step/forward/layer0,100,1,,launches_covered,3\n"),
            std::string::npos)
      << as_csv.out;

  const std::string trace = dir_.file("trace.json");
  ASSERT_EQ(run_tool({"export", "1", "--db", db_, "--perfetto", trace}).exit_code, 0);
  const nlohmann::json perfetto = nlohmann::json::parse(test::read_file(trace));
  std::size_t counters = 0;
  for (const nlohmann::json& e : perfetto["traceEvents"]) counters += e["ph"] == "C" ? 1 : 0;
  EXPECT_EQ(counters, 24u);  // 6 covered launches x (FLOP/s, bytes/s) x (start, end): no roofs
}

// Records written while the program runs are stored before it ends.
TEST_F(ProfileCli, RecordsAreStoredWhileTheProgramRuns) {
  TraceEvent mark;
  mark.kind = TraceKind::nvtx_mark;
  mark.name = "early";
  const std::string line = nlohmann::json(mark).dump();
  test::write_file(dir_.file("line.txt"), line + "\n");
  // The program checks the store itself, 2 s after writing: the run is still running.
  const std::string script = "cat '" + dir_.file("line.txt") +
                             "' >> \"$TIMEROOF_PROFILE_DIR/journal-$$.jsonl\"; sleep 2; '" +
                             test::tool_binary() + "' export --db '" + db_ + "' --out '" +
                             dir_.file("mid.json") + "'";
  const auto result = profile({"--", "sh", "-c", script});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const auto doc = nlohmann::json::parse(test::read_file(dir_.file("mid.json")));
  ASSERT_EQ(doc["runs"].size(), 1U);
  EXPECT_EQ(doc["runs"][0]["status"], "running");
  ASSERT_TRUE(doc["runs"][0].contains("trace"));
  EXPECT_EQ(doc["runs"][0]["trace"][0]["name"], "early");
}

#if TIMEROOF_BUILT_WITH_CUDA
TEST(ProfileCliBuild, FindsTheBuiltInjectionLibrary) {
  TempDir dir;
  const auto result =
      run_tool({"profile", "--db", dir.file("p.db"), "--", "true"}, {}, kLimitSeconds);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  ResultsStore store = ResultsStore::open(dir.file("p.db"), ResultsStore::Access::read_only);
  const auto runs = store.load_all();
  ASSERT_EQ(runs.size(), 1U);
  const auto& environment = runs[0].run.spec["profile"]["environment"];
  const std::string library = environment["CUDA_INJECTION64_PATH"];
  EXPECT_TRUE(library.ends_with("/libtimeroof_inject.so")) << library;
  const std::string cupti = environment.value("NVTX_INJECTION64_PATH", "");
  EXPECT_NE(cupti.find("libcupti"), std::string::npos) << environment.dump();
}
#endif

}  // namespace
}  // namespace timeroof
