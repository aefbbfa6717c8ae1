// The CLI as a user meets it: help, usage errors, exit codes, no-GPU behaviour,
// and export/import through the binary. Runs without a GPU: CUDA_VISIBLE_DEVICES
// is emptied where a test needs "no GPU" even on a GPU machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/format.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof::test {
namespace {

const std::vector<std::pair<std::string, std::string>> kNoGpu = {{"CUDA_VISIBLE_DEVICES", ""}};
const std::string kSample = source_dir() + "/samples/sample-run.json.gz";
// What `timeroof run` shows without a GPU: every operator family and a model table.
const std::string kShownSample = source_dir() + "/samples/sample-full-run-h200.json.gz";

// Every error is one line, in the tool's voice.
void expect_one_line_error(const ToolResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("timeroof: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(Cli, HelpForEveryCommand) {
  const ToolResult top = run_tool({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  for (const char* command : {"info", "run", "ceilings", "sweep", "metrics", "runs", "export",
                              "import", "merge", "report", "analyze", "compare"}) {
    EXPECT_NE(top.out.find(command), std::string::npos) << command;
    const ToolResult r = run_tool({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_NE(r.out.find("Examples:"), std::string::npos) << command << "\n" << r.out;
    EXPECT_NE(r.out.find("timeroof " + std::string(command)), std::string::npos) << r.out;
  }
}

// Every line of `text` at most `columns` wide (one column per code point).
void expect_lines_within(const std::string& text, std::size_t columns, const std::string& what) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    EXPECT_LE(timeroof::display_width(line), columns) << what << ": " << line;
}

// Help and tables fit the terminal (#20): $COLUMNS, else the terminal's width. Where
// stdout is no terminal, help wraps at 100 columns and a table keeps one row a line.
TEST(Cli, HelpAndTablesFitTheTerminal) {
  const std::vector<std::pair<std::string, std::string>> narrow{{"COLUMNS", "80"}};
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--help"},
                                             {"run", "--help"},
                                             {"sweep", "--help"},
                                             {"sweep", "conv2d", "--help"},
                                             {"sweep", "lstm", "--help"},
                                             {"ceilings", "--help"},
                                             {"metrics", "--help"},
                                             {"export", "--help"},
                                             {"merge", "--help"},
                                             {"analyze", "--help"},
                                             {"compare", "--help"}}) {
    const ToolResult help = run_tool(args, narrow);
    EXPECT_EQ(help.exit_code, 0) << help.err;
    expect_lines_within(help.out, 80, args.front());
    expect_lines_within(run_tool(args).out, 100, args.front() + " (no terminal)");
  }
  // A wrapped description continues under itself, not under the option.
  const std::string sweep = run_tool({"sweep", "--help"}, narrow).out;
  EXPECT_NE(sweep.find("one\n                              worker process"), std::string::npos)
      << sweep;

  TempDir dir;
  const std::string db = dir.file("t.db");
  ASSERT_EQ(run_tool({"import", "--db", db, kSample}).exit_code, 0);
  ASSERT_EQ(
      run_tool({"import", "--db", db, source_dir() + "/samples/sample-run-h100.json.gz"}).exit_code,
      0);
  const ToolResult whole = run_tool({"runs", "--db", db});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(count_lines(whole.out), 4) << whole.out;  // header, rule, a line per run
  std::size_t widest = 0;
  std::istringstream lines(whole.out);
  for (std::string line; std::getline(lines, line);)
    widest = std::max(widest, timeroof::display_width(line));
  ASSERT_GT(widest, 100u) << "the sample's command lines make this table wide";
  const ToolResult fitted = run_tool({"runs", "--db", db}, {{"COLUMNS", "100"}});
  expect_lines_within(fitted.out, 100, "runs");
  EXPECT_GT(count_lines(fitted.out), 4) << fitted.out;
  // Nothing is lost to the wrapping: every word of the wide table is still there.
  std::istringstream words(whole.out);
  for (std::string word; words >> word;)
    if (word.find_first_not_of('-') != std::string::npos)  // the rule under the header narrows
      EXPECT_NE(fitted.out.find(word), std::string::npos) << word << "\n" << fitted.out;
  // Too narrow to fit even with every text column at its longest word: unchanged.
  EXPECT_EQ(run_tool({"runs", "--db", db}, {{"COLUMNS", "20"}}).out, whole.out);
}

// The main job without a GPU fits a 120-column terminal: the roofs' methods are
// shortened (l2_read's is ~14,000 characters), skip reasons wrapped.
TEST(Cli, RunWithoutGpuFitsAWideTerminal) {
  TempDir dir;
  auto env = kNoGpu;
  env.emplace_back("COLUMNS", "120");
  const ToolResult r = run_tool({"run", "--out", dir.file("report")}, env);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.out.find("whole method is in the export"), std::string::npos);
  expect_lines_within(r.out, 120, "run without a GPU");
}

TEST(Cli, VersionNamesTheGitSha) {
  const ToolResult r = run_tool({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("timeroof 0.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("("), std::string::npos);
}

TEST(Cli, UsageErrorsAreOneLineWithExitCode1) {
  expect_one_line_error(run_tool({}), 1, "--help");
  expect_one_line_error(run_tool({"fly"}), 1, "fly");
  expect_one_line_error(run_tool({"info", "--frobnicate"}), 1, "--frobnicate");
  expect_one_line_error(run_tool({"info", "--device", "one"}), 1, "--device");
  expect_one_line_error(run_tool({"import"}), 1, "files");
  expect_one_line_error(run_tool({"import", "/nonexistent/x.json"}), 1, "/nonexistent/x.json");
  // Flags that were silently ignored together (issue 16): refused, one line.
  expect_one_line_error(run_tool({"sweep", "conv2d", "--dry-run", "--resume", "1"}), 1, "excludes");
  for (const char* command : {"report", "analyze"})
    expect_one_line_error(run_tool({command, "--from", kSample, "--db", "x.db"}), 1, "excludes");
}

TEST(Cli, CeilingsRejectsUnknownRoofsBeforeAnyGpuWork) {
  if (!TIMEROOF_BUILT_WITH_CUDA) {
    expect_one_line_error(run_tool({"ceilings"}), 2, "without the CUDA toolkit");
    GTEST_SKIP() << "analysis-only build: no ceiling kernels";
  }
  // Exit 1 (the flag is wrong), not 2: the name is checked before the GPU is looked for.
  const ToolResult r = run_tool({"ceilings", "--only", "hbm_copy,warp_speed"}, kNoGpu);
  expect_one_line_error(r, 1, "unknown roof 'warp_speed'");
  EXPECT_NE(r.err.find("hbm_copy"), std::string::npos) << "lists the known roofs";
  expect_one_line_error(run_tool({"ceilings", "--only", "hbm_copy"}, kNoGpu), 2, "no GPU");
}

TEST(Cli, MetricsWorkOfflineWithAChipName) {
  if (!TIMEROOF_BUILT_WITH_CUDA) {
    expect_one_line_error(run_tool({"metrics", "--chip", "GH100"}), 2, "without the CUDA toolkit");
    GTEST_SKIP() << "analysis-only build: the metric catalog needs CUPTI";
  }
  const ToolResult list =
      run_tool({"metrics", "--chip", "GH100", "--filter", "dram__bytes_"}, kNoGpu);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  // Each metric with the unit of its values and CUPTI's description (#20).
  EXPECT_NE(list.out.find("dram__bytes_read   byte  # of bytes read from DRAM\n"),
            std::string::npos)
      << list.out;
  EXPECT_NE(list.out.find("dram__bytes_write  byte  # of bytes written to DRAM\n"),
            std::string::npos)
      << list.out;
  const ToolResult described =
      run_tool({"metrics", "--chip", "GH100", "--filter", "dram__bytes_read", "--json"}, kNoGpu);
  ASSERT_EQ(described.exit_code, 0) << described.err;
  const nlohmann::json metric = nlohmann::json::parse(described.out)["metrics"].at(0);
  EXPECT_EQ(metric["name"], "dram__bytes_read");
  EXPECT_EQ(metric["unit"], "byte");
  EXPECT_EQ(metric["type"], "counter");
  EXPECT_EQ(metric["hw_unit"], "dram");
  EXPECT_EQ(metric["description"], "# of bytes read from DRAM");
  const ToolResult passes = run_tool(
      {"metrics", "--chip", "GA100", "--passes", "dram__bytes_read.sum,lts__t_bytes.sum", "--json"},
      kNoGpu);
  ASSERT_EQ(passes.exit_code, 0) << passes.err;
  EXPECT_EQ(nlohmann::json::parse(passes.out)["passes"], 1);
  expect_one_line_error(
      run_tool({"metrics", "--chip", "GH100", "--passes", "dram__bytes_raed.sum"}), 1,
      "'dram__bytes_raed.sum'");
  // What `timeroof profile` collects per kernel: ncu can be given the same list.
  const ToolResult plan =
      run_tool({"metrics", "--chip", "GH100", "--profile-plan", "--json"}, kNoGpu);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const nlohmann::json planned = nlohmann::json::parse(plan.out);
  const auto names = planned["metrics"].get<std::vector<std::string>>();
  for (const char* name : {"dram__bytes_read.sum", "lts__t_sectors_srcunit_tex.sum",
                           "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
                           "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  EXPECT_EQ(std::find(names.begin(), names.end(), "dram__cycles_elapsed.avg.per_second"),
            names.end());  // the DRAM clock is left out
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_GE(planned["passes"].get<int>(), 2);
  const ToolResult plan_text = run_tool({"metrics", "--chip", "GH100", "--profile-plan"}, kNoGpu);
  ASSERT_EQ(plan_text.exit_code, 0) << plan_text.err;
  EXPECT_EQ(std::count(plan_text.out.begin(), plan_text.out.end(), '\n'),
            static_cast<std::ptrdiff_t>(names.size()));
  EXPECT_NE(plan_text.err.find(std::to_string(names.size()) + " metric(s) per measured kernel"),
            std::string::npos)
      << plan_text.err;
  expect_one_line_error(run_tool({"metrics", "--chip", "GH100", "--profile-plan", "--passes",
                                  "dram__bytes_read.sum"}),
                        1, "--passes");
  expect_one_line_error(run_tool({"metrics", "--chip", "GX1"}), 1, "GH100");
  expect_one_line_error(run_tool({"metrics"}, kNoGpu), 1, "pass --chip");
}

// The families, specs and dry run are host-only: they work in the analysis-only build too.
TEST(Cli, SweepDryRunNeedsNoGpu) {
  const ToolResult all = run_tool({"sweep", "conv2d", "--dry-run"}, kNoGpu);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("for 108 points"), std::string::npos) << all.out;
  const ToolResult some = run_tool(
      {"sweep", "conv2d", "--batch", "1..8:x2", "--precision=fp16,fp32", "--dry-run"}, kNoGpu);
  ASSERT_EQ(some.exit_code, 0) << some.err;
  EXPECT_NE(some.out.find("8 points"), std::string::npos) << some.out;
  TempDir dir;
  std::ofstream(dir.file("s.toml"))
      << "[sweep]\nfamily = \"lstm\"\n[axes]\nhidden_size = \"16..64:x2\"\n";
  const ToolResult file = run_tool({"sweep", dir.file("s.toml"), "--dry-run"}, kNoGpu);
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_NE(file.out.find("3 points"), std::string::npos) << file.out;
}

// `sweep <family> --help` is built from the family registry: every axis, its values, its default.
TEST(Cli, SweepHelpListsTheFamilysAxes) {
  // Wide enough that no description wraps: this reads the text, not the layout.
  const ToolResult conv = run_tool({"sweep", "conv2d", "--help"}, {{"COLUMNS", "1000"}});
  ASSERT_EQ(conv.exit_code, 0) << conv.err;
  for (const char* text :
       {"--batch LIST", "batch size N; integers; default: 16", "--cudnn-api LIST",
        "values: graph, legacy; default: graph", "--pad LIST", "integers or same; default: same",
        "--transfer LIST", "--dry-run", "Examples:"})
    EXPECT_NE(conv.out.find(text), std::string::npos) << text << "\n" << conv.out;
  EXPECT_EQ(conv.out.find("--cudnn_api"), std::string::npos) << "the underscore spelling is hidden";
  const ToolResult lstm = run_tool({"sweep", "lstm", "--help"});
  ASSERT_EQ(lstm.exit_code, 0) << lstm.err;
  EXPECT_NE(lstm.out.find("--hidden-size LIST"), std::string::npos) << lstm.out;
  const ToolResult sweep = run_tool({"sweep", "--help"});
  for (const char* family : {"conv2d", "lstm", "gemm"})
    EXPECT_NE(sweep.out.find(family), std::string::npos) << sweep.out;
  const ToolResult gemm = run_tool({"sweep", "gemm", "--help"});
  ASSERT_EQ(gemm.exit_code, 0) << gemm.err;
  for (const char* text : {"--m LIST", "--trans-a LIST", "--epilogue LIST", "--algo LIST"})
    EXPECT_NE(gemm.out.find(text), std::string::npos) << text << "\n" << gemm.out;
  const ToolResult gemm_points = run_tool(
      {"sweep", "--dry-run", "gemm", "--m", "128,256", "--precision", "int8,fp8_e5m2"}, kNoGpu);
  ASSERT_EQ(gemm_points.exit_code, 0) << gemm_points.err;
  EXPECT_NE(gemm_points.out.find("4 points"), std::string::npos) << gemm_points.out;
  expect_one_line_error(
      run_tool({"sweep", "--dry-run", "gemm", "--precision", "int8", "--trans-b", "t"}, kNoGpu), 1,
      "trans_a = t, trans_b = n");
  // Both spellings of a key, options on either side of the family's name.
  const ToolResult spelled = run_tool(
      {"sweep", "--dry-run", "lstm", "--hidden_size", "16,32", "--seq-length", "8"}, kNoGpu);
  ASSERT_EQ(spelled.exit_code, 0) << spelled.err;
  EXPECT_NE(spelled.out.find("2 points"), std::string::npos) << spelled.out;
  expect_one_line_error(run_tool({"sweep", "--dry-run", "lstm", "--resume", "1"}), 1, "excludes");
}

TEST(Cli, BadSweepsAreUsageErrorsBeforeAnyGpuWork) {
  expect_one_line_error(run_tool({"sweep", "conv2d", "--batch", "8..1:x2"}, kNoGpu), 1, "batch");
  expect_one_line_error(run_tool({"sweep", "conv2d", "--frob", "3"}, kNoGpu), 1, "'frob'");
  expect_one_line_error(run_tool({"sweep", "conv2d", "--precision", "fp7"}, kNoGpu), 1, "fp16");
  expect_one_line_error(run_tool({"sweep", "conv2d", "--batch"}, kNoGpu), 1, "needs a value");
  expect_one_line_error(run_tool({"sweep", "matmul"}, kNoGpu), 1, "conv2d, lstm, gemm");
  TempDir dir;
  std::ofstream(dir.file("bad.toml")) << "[sweep]\nfamily = \"conv2d\"\nbatchh = 3\n";
  expect_one_line_error(run_tool({"sweep", dir.file("bad.toml"), "--dry-run"}), 1, "batchh");
  // A valid sweep without a GPU: the environment, not the flags.
  expect_one_line_error(run_tool({"sweep", "conv2d", "--batch", "4"}, kNoGpu), 2, "no GPU");
}

TEST(Cli, InfoWithoutGpuExits2WithTheReason) {
  const ToolResult r = run_tool({"info"}, kNoGpu);
  expect_one_line_error(r, 2, "no GPU");
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(Cli, DeviceFlagWithoutGpuIsAnEnvironmentError) {
  expect_one_line_error(run_tool({"info", "--device", "3"}, kNoGpu), 2, "no GPU");
}

TEST(Cli, RunWithoutGpuShowsTheBundledSample) {
  TempDir dir;
  const ToolResult r = run_tool({"run", "--db", dir.file("t.db")}, kNoGpu);
  EXPECT_EQ(r.exit_code, 2) << "no GPU, nothing measured: an environment problem\n" << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no GPU here"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sample-full-run-h200.json.gz"), std::string::npos) << r.err;
  const auto sample = nlohmann::json::parse(read_export_text(kShownSample));
  const std::string gpu = sample["runs"][0]["machine"]["gpu"]["name"];
  const std::string sha = sample["runs"][0]["git_sha"];
  const std::string date = sample["runs"][0]["started_at"];
  const std::string notice = "The bundled sample, not a measurement of this machine: " + gpu +
                             ", recorded " + date + " by timeroof 0.1.0 (commit " + sha + ").";
  EXPECT_NE(r.err.find(notice), std::string::npos) << r.err;
  EXPECT_NE(r.out.find(gpu), std::string::npos) << r.out;
  // One numbering: the CLI's run 1 is the report's Run 1.
  EXPECT_EQ(r.out.rfind("run 1 (", 0), 0u) << r.out;
  EXPECT_NE(read_file("timeroof-report/report.md").find("\n## Run 1: " + gpu), std::string::npos);
  EXPECT_NE(read_file("timeroof-report/report.md").find("# timeroof report\n\n> " + notice),
            std::string::npos)
      << "the banner, first";
  EXPECT_NE(read_file("timeroof-report/index.html").find("<p class=\"note\">" + notice + "</p>"),
            std::string::npos);
  EXPECT_NE(r.out.find("counters"), std::string::npos) << r.out;
  EXPECT_FALSE(std::ifstream(dir.file("t.db")).good()) << "no GPU: nothing is stored";
  // The sample's report, in ./timeroof-report by default; its path is the last line.
  EXPECT_EQ(r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1), "timeroof-report/index.html\n")
      << r.out;
  EXPECT_TRUE(std::ifstream("timeroof-report/index.html").good());
  const ToolResult out = run_tool({"run", "--out", dir.file("report")}, kNoGpu);
  EXPECT_EQ(out.exit_code, 2) << out.err;
  EXPECT_EQ(count_lines(out.err), 1) << out.err;
  EXPECT_EQ(out.out.substr(out.out.rfind('\n', out.out.size() - 2) + 1),
            dir.file("report") + "/index.html\n")
      << out.out;
  EXPECT_NE(read_file(dir.file("report/index.html")).find(gpu), std::string::npos);
  EXPECT_TRUE(std::ifstream(dir.file("report/report.md")).good());
}

// An export's runs without the unit-labelled twins of the time counters
// (core/json_io.cpp, #20), which the bundled sample (written before them)
// lacks; there must be twins to remove.
nlohmann::json without_time_twins(nlohmann::json runs) {
  std::size_t twins = 0;
  const auto drop = [&](nlohmann::json& counters) {
    for (const char* key : {"duration_s", "gpu__time_duration.sum_ns", "gpu__time_duration.sum_s"})
      twins += counters.erase(key);
  };
  for (nlohmann::json& run : runs)
    for (nlohmann::json& point : run["points"]) {
      drop(point["counters"]);
      for (nlohmann::json& kernel : point["kernels"]) drop(kernel["metrics"]);
    }
  EXPECT_GT(twins, 1000u);
  return runs;
}

TEST(Cli, RunWithoutGpuAndJsonPrintsTheSampleDocument) {
  const ToolResult r = run_tool({"run", "--json"}, kNoGpu);
  ASSERT_EQ(r.exit_code, 2) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["format"], "timeroof-results");
  // Written by this commit's exporter: the document comes back as it is.
  EXPECT_EQ(doc["runs"], nlohmann::json::parse(read_export_text(kShownSample))["runs"]);
}

// `export --out FILE.gz` writes gzip, and every reader takes it: the same runs as
// the plain export. A damaged gzip file is refused in one line and imports nothing.
TEST(Cli, GzipExportsRoundTripAndDamagedOnesImportNothing) {
  TempDir dir;
  const std::string db = dir.file("g.db");
  ASSERT_EQ(run_tool({"import", kSample, "--db", db}).exit_code, 0);
  const ToolResult plain = run_tool({"export", "--db", db});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(run_tool({"export", "--db", db, "--out", dir.file("run.json.gz")}).exit_code, 0);
  const std::string packed = read_file(dir.file("run.json.gz"));
  ASSERT_GE(packed.size(), 2u);
  EXPECT_EQ(packed.substr(0, 2), "\x1f\x8b");
  EXPECT_LT(packed.size() * 5, plain.out.size());
  EXPECT_EQ(read_export_text(dir.file("run.json.gz")), plain.out);

  const std::string again = dir.file("again.db");
  ASSERT_EQ(run_tool({"import", dir.file("run.json.gz"), "--db", again}).exit_code, 0);
  EXPECT_EQ(run_tool({"export", "--db", again}).out, plain.out);
  const ToolResult analyzed = run_tool({"analyze", "--from", dir.file("run.json.gz")}, kNoGpu);
  EXPECT_EQ(analyzed.exit_code, 0) << analyzed.err;

  write_file(dir.file("cut.json.gz"), packed.substr(0, packed.size() / 2));
  const std::string stored_before = read_file(again);
  expect_one_line_error(run_tool({"import", dir.file("cut.json.gz"), "--db", again}), 1,
                        "the gzip data ends early");
  EXPECT_EQ(read_file(again), stored_before);
}

TEST(Cli, ReportHelpHasExamples) {
  const ToolResult top = run_tool({"--help"});
  EXPECT_NE(top.out.find("report"), std::string::npos) << top.out;
  const ToolResult r = run_tool({"report", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Examples:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("timeroof report --from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--format"), std::string::npos) << r.out;
}

TEST(Cli, ReportFromAnExportFileNeedsNoGpu) {
  TempDir dir;
  const ToolResult r = run_tool({"report", "--from", kSample, "--out", dir.file("rep")}, kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, dir.file("rep") + "/index.html\n");
  EXPECT_TRUE(r.err.empty()) << r.err;
  const std::string html = read_file(dir.file("rep/index.html"));
  const auto sample = nlohmann::json::parse(read_export_text(kSample));
  EXPECT_NE(html.find(sample["runs"][0]["machine"]["gpu"]["name"].get<std::string>()),
            std::string::npos);
  EXPECT_NE(read_file(dir.file("rep/report.md")).find("### Findings"), std::string::npos);
  EXPECT_TRUE(std::ifstream(dir.file("rep/run1-ceilings.svg")).good());
}

TEST(Cli, ReportFromTheStoreAllRunsOrNamedOnes) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  ASSERT_EQ(run_tool({"import", kSample, "--db", db}).exit_code, 0);
  const ToolResult all = run_tool({"report", "--db", db, "--out", dir.file("all")}, kNoGpu);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, dir.file("all") + "/index.html\n");
  const auto sample = nlohmann::json::parse(read_export_text(kSample));
  const std::string uuid = sample["runs"][0]["uuid"];
  const ToolResult one =
      run_tool({"report", uuid.substr(0, 8), "--db", db, "--out", dir.file("one")}, kNoGpu);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(read_file(dir.file("one/report.md")).find("## Run 2"), std::string::npos);
  EXPECT_NE(read_file(dir.file("one/report.md")).find(uuid), std::string::npos);
}

// The sample's first 18 points: a report with few charts, quick to convert.
std::string small_sample(const TempDir& dir) {
  auto doc = nlohmann::json::parse(read_export_text(kSample));
  auto& points = doc["runs"][0]["points"];
  points.erase(points.begin() + 18, points.end());
  std::ofstream(dir.file("small.json")) << doc.dump();
  return dir.file("small.json");
}

// The files report.md references as images: lines "![caption](file)" (its other
// links, the contents and the findings', point at headings).
std::vector<std::string> markdown_images(const std::string& markdown) {
  std::vector<std::string> files;
  std::istringstream lines(markdown);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t at = line.rfind("](");
    if (line.rfind("![", 0) == 0 && at != std::string::npos && line.back() == ')')
      files.push_back(line.substr(at + 2, line.size() - at - 3));
  }
  return files;
}

bool on_path(const std::string& program) {
  return run_process({"/bin/sh", "-c", "command -v " + program}).exit_code == 0;
}

TEST(Cli, ReportFormatPngConvertsEveryChart) {
  if (!on_path("rsvg-convert")) GTEST_SKIP() << "rsvg-convert not installed (librsvg2-bin)";
  TempDir dir;
  const ToolResult r = run_tool(
      {"report", "--from", small_sample(dir), "--out", dir.file("rep"), "--format", "png"}, kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, dir.file("rep") + "/index.html\n");
  const std::vector<std::string> files = markdown_images(read_file(dir.file("rep/report.md")));
  ASSERT_GE(files.size(), 5u);
  for (const std::string& file : files) {
    ASSERT_EQ(file.substr(file.size() - 4), ".png") << file;
    EXPECT_EQ(read_file(dir.file("rep/" + file)).substr(0, 4), "\x89PNG") << file;
    EXPECT_TRUE(std::ifstream(dir.file("rep/" + file.substr(0, file.size() - 4) + ".svg")).good())
        << "the SVG stays next to " << file;
  }
}

TEST(Cli, ReportFormatWithoutRsvgConvertKeepsTheSvgReport) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("bin"));  // a PATH without rsvg-convert
  const std::string report = dir.file("rep");
  const ToolResult r =
      run_tool({"report", "--from", small_sample(dir), "--out", report, "--format", "pdf"},
               {{"CUDA_VISIBLE_DEVICES", ""}, {"PATH", dir.file("bin")}});
  expect_one_line_error(r, 2, "rsvg-convert is not installed");
  EXPECT_NE(r.err.find("sudo apt-get install librsvg2-bin"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(report), std::string::npos) << "says where the SVG report is: " << r.err;
  // The SVG report is complete: report.md references SVG files that exist.
  EXPECT_TRUE(std::ifstream(report + "/index.html").good());
  const std::vector<std::string> files = markdown_images(read_file(report + "/report.md"));
  ASSERT_GE(files.size(), 5u);
  for (const std::string& file : files) {
    EXPECT_EQ(file.substr(file.size() - 4), ".svg") << file;
    EXPECT_EQ(read_file(report + "/" + file).rfind("<?xml", 0), 0u) << file;
  }
}

TEST(Cli, ReportFormatWhenRsvgConvertFailsSaysWhy) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("bin"));
  const std::string fake = dir.file("bin/rsvg-convert");
  std::ofstream(fake) << "#!/bin/sh\necho 'cannot render: out of cheese' >&2\nexit 3\n";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  const ToolResult r =
      run_tool({"report", "--from", small_sample(dir), "--out", dir.file("rep"), "--format", "png"},
               {{"CUDA_VISIBLE_DEVICES", ""}, {"PATH", dir.file("bin")}});
  expect_one_line_error(r, 2, "rsvg-convert could not convert");
  EXPECT_NE(r.err.find("cannot render: out of cheese"), std::string::npos) << r.err;
  EXPECT_TRUE(std::ifstream(dir.file("rep/index.html")).good());
  EXPECT_EQ(read_file(dir.file("rep/report.md")).find(".png)"), std::string::npos);
}

TEST(Cli, ReportFormatMustBeKnown) {
  TempDir dir;
  expect_one_line_error(
      run_tool({"report", "--from", kSample, "--out", dir.file("x"), "--format", "jpeg"}, kNoGpu),
      1, "'jpeg'; use svg, png or pdf");
  EXPECT_FALSE(std::ifstream(dir.file("x/index.html")).good()) << "nothing written on error";
}

TEST(Cli, ReportErrorsAreOneLine) {
  TempDir dir;
  expect_one_line_error(run_tool({"report", "--db", dir.file("none.db"), "--out", dir.path()}), 1,
                        dir.file("none.db"));
  EXPECT_FALSE(std::ifstream(dir.file("none.db")).good()) << "a read must not create the store";
  const std::string db = dir.file("r.db");
  ASSERT_EQ(run_tool({"import", kSample, "--db", db}).exit_code, 0);
  expect_one_line_error(run_tool({"report", "99", "--db", db, "--out", dir.file("x")}), 1,
                        "no run '99'");
  expect_one_line_error(
      run_tool({"report", "--from", dir.file("missing.json"), "--out", dir.file("x")}), 1,
      dir.file("missing.json"));
  EXPECT_FALSE(std::ifstream(dir.file("x/index.html")).good()) << "nothing written on error";
}

TEST(Cli, AnalyzeTheSampleAsATableNeedsNoGpu) {
  const ToolResult r = run_tool({"analyze", "--from", kSample}, kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const auto sample = nlohmann::json::parse(read_export_text(kSample));
  EXPECT_NE(r.out.find(sample["runs"][0]["machine"]["gpu"]["name"].get<std::string>()),
            std::string::npos);
  for (const char* text :
       {"sweep conv2d-default", "sweep lstm-default", "T_roof", "T_cuda", "T_tc", "T_L2",
        "T_launch", "T_xfer", "headroom", "launch_bound", "memory_bound(l2)",
        "n/m: L1 not measured meaningfully (TMA)", "series along batch",
        "T_stream = ", "slope 95% interval", "knee batch ~ ",
        "findings, ranked by the time they explain", "  1. [",
        // The times table: three times with intervals, the measured parts, the class
        // leading with the numbers that decided it.
        "times of sweep conv2d-default", "T_stream", "T_graph", "not expl", "premium", "class: why",
        "launch_bound: the host issues a call in 6.1 us, the GPU runs it in 5.0 us (T_graph)"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text;
  // All four transfer roofs (the H200 sample's): a point's T_xfer is on those of
  // its host memory.
  for (const char* roof :
       {"H2D pinned 55.3 GB/s", "H2D pageable 8.46 GB/s", "D2H pageable 17.4 GB/s"})
    EXPECT_NE(r.out.find(roof), std::string::npos) << roof;
  // The failed point is listed with its reason.
  EXPECT_NE(r.out.find(" failed: "), std::string::npos);
}

TEST(Cli, CompareOfTheH100AndH200SamplesFindsWhereTheH200WinsAndGates) {
  const std::string h100 = source_dir() + "/samples/sample-run-h100.json.gz";
  const ToolResult table = run_tool({"compare", h100, kSample}, kNoGpu);
  EXPECT_EQ(table.exit_code, 4) << "some host-bound points are slower on the H200 VM";
  EXPECT_TRUE(table.err.empty()) << table.err;
  for (const char* text : {"base NVIDIA H100 80GB HBM3, other NVIDIA H200", "hbm_copy",
                           "worse point", "findings:", "memory_bound(dram) on both"})
    EXPECT_NE(table.out.find(text), std::string::npos) << text << "\n" << table.out;
  const ToolResult same = run_tool({"compare", kSample, kSample, "--format", "json"}, kNoGpu);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  const auto doc = nlohmann::json::parse(same.out);
  EXPECT_EQ(doc["format"], "timeroof-comparison");
  EXPECT_EQ(doc["worse"], 0);
  const ToolResult csv =
      run_tool({"compare", h100, kSample, "--format", "csv", "--threshold", "50%"}, kNoGpu);
  EXPECT_EQ(csv.exit_code, 0) << "nothing is 50% worse beyond its noise\n" << csv.out;
  EXPECT_EQ(csv.out.rfind("kind,name,sweep,", 0), 0u);
  expect_one_line_error(run_tool({"compare", h100, kSample, "--threshold", "abc"}, kNoGpu), 1,
                        "give a share such as 5% or 0.05");
  TempDir dir;
  expect_one_line_error(run_tool({"compare", "3,,4", kSample, "--db", dir.file("none.db")}, kNoGpu),
                        1, "neither an export file nor run ids");
}

TEST(Cli, CompareWritesAnHtmlOrMarkdownReportAndStillGates) {
  const std::string h100 = source_dir() + "/samples/sample-run-h100.json.gz";
  TempDir dir;
  const ToolResult html =
      run_tool({"compare", h100, kSample, "--format", "html", "--out", dir.file("html")}, kNoGpu);
  EXPECT_EQ(html.exit_code, 4) << "the report does not change the gate\n" << html.err;
  EXPECT_EQ(html.out, dir.file("html") + "/index.html\n");
  const std::string page = read_file(dir.file("html") + "/index.html");
  for (const char* text :
       {"<title>timeroof compare: NVIDIA H200 against NVIDIA H100 80GB HBM3", ">Findings</h2>",
        "at batch &gt;= 64 (5 points): memory_bound(dram) on both, and its dram roof is 1.47x",
        "<svg"})
    EXPECT_NE(page.find(text), std::string::npos) << text;
  const ToolResult markdown = run_tool(
      {"compare", kSample, kSample, "--format", "markdown", "--out", dir.file("md")}, kNoGpu);
  EXPECT_EQ(markdown.exit_code, 0) << markdown.err;
  EXPECT_EQ(markdown.out, dir.file("md") + "/report.md\n");
  EXPECT_NE(read_file(dir.file("md") + "/report.md").find("No point differs"), std::string::npos);
  expect_one_line_error(run_tool({"compare", h100, kSample, "--format", "html", "--json"}, kNoGpu),
                        1, "--json and --format html disagree");
}

TEST(Cli, AnalyzeAsJsonAndCsv) {
  TempDir dir;
  const auto sample = nlohmann::json::parse(read_export_text(kSample));
  const std::size_t points = sample["runs"][0]["points"].size();
  const ToolResult json = run_tool({"analyze", "--from", kSample, "--format", "json"}, kNoGpu);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["format"], "timeroof-analysis");
  ASSERT_EQ(doc["runs"].size(), 1u);
  EXPECT_EQ(doc["runs"][0]["points"].size(), points);
  EXPECT_FALSE(doc["runs"][0]["findings"].empty());
  EXPECT_FALSE(doc["runs"][0]["series"].empty());
  // --json is the same as --format json.
  EXPECT_EQ(run_tool({"analyze", "--from", kSample, "--json"}, kNoGpu).out, json.out);

  const ToolResult csv =
      run_tool({"analyze", "--from", kSample, "--format", "csv", "--out", dir.file("a.csv")});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_TRUE(csv.out.empty()) << "--out writes the file, not stdout";
  const std::string text = read_file(dir.file("a.csv"));
  EXPECT_EQ(count_lines(text), static_cast<int>(points) + 1);  // header + one row per point
  const std::string header = text.substr(0, text.find('\n'));
  for (const char* column :
       {"run_uuid,run_id,gpu_name,gpu_chip,gpu_uuid,sweep,seq,op,precision",
        "param_batch",
        "t_roof_s",
        "t_l1_s",
        "l1_used",
        "class",
        "efficiency",
        "tensor_share",
        "t_lower_bound_s",
        "lower_bound_scope",
        "headroom",
        "t_xfer_s,transfer_host",
        "status,reason,time_source,time_s,call_s,call_ci_low_s,call_ci_high_s,call_mean_s,"
        "call_min_s,call_max_s,call_spread,call_samples,call_calls_per_sample,call_converged,"
        "stream_s,stream_ci_low_s,stream_ci_high_s",
        "graph_s,graph_ci_low_s,graph_ci_high_s",
        "issue_s,issue_ci_low_s,issue_ci_high_s",
        "graph_unavailable,kernel_s",
        "analytic_flop",
        "work_flop",
        "dram_bytes",
        "dram_intensity_flop_per_byte",
        "achieved_flop_per_s",
        "attainable_flop_per_s",
        "bottleneck,class,class_rule,class_reason",
        "separated,host_overhead_s,device_gaps_s,transfer_s,within_roof_s,lost_to_roof_s,"
        "kernel_overlap_s,not_explained_s,call_premium_s"})
    EXPECT_NE(header.find(column), std::string::npos) << column;
  EXPECT_NE(text.find(",memory_bound,memory_bound(l2),"), std::string::npos);
  EXPECT_NE(text.find(",T_stream,"), std::string::npos);
  EXPECT_EQ(text.find(",T_call,"), std::string::npos);  // every point has T_stream
  EXPECT_NE(text.find(",true,"), std::string::npos);    // separated: T_graph measured
  EXPECT_NE(text.find(",host_issue,\"the host issues a call in 6.1 us, the GPU runs it in 5.0 us "
                      "(T_graph)\","),
            std::string::npos);
  EXPECT_EQ(text.find(",-0,"), std::string::npos);  // no negative zero
  EXPECT_NE(text.find(",per-kernel,"), std::string::npos);
}

// Data out (#20): export --format csv writes its tables into --out DIR, and every
// command that prints answers --json with one JSON document (tests/cpu/data_out_test.py
// loads them all with Python's csv and json modules and checks the schemas).
TEST(Cli, ExportCsvAndJsonEverywhere) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  const ToolResult imported = run_tool({"import", kSample, "--db", db, "--json"}, kNoGpu);
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const auto sample = nlohmann::json::parse(read_export_text(kSample));
  const nlohmann::json ids = nlohmann::json::parse(imported.out);
  EXPECT_EQ(ids["runs"].at(0)["id"], 1);
  EXPECT_EQ(ids["runs"].at(0)["uuid"], sample["runs"][0]["uuid"]);

  const ToolResult tables =
      run_tool({"export", "--db", db, "--format", "csv", "--out", dir.file("csv")}, kNoGpu);
  ASSERT_EQ(tables.exit_code, 0) << tables.err;
  EXPECT_EQ(count_lines(tables.out), 4) << tables.out;  // the paths written
  const std::string points = read_file(dir.file("csv/points.csv"));
  EXPECT_EQ(count_lines(points), static_cast<int>(sample["runs"][0]["points"].size()) + 1);
  EXPECT_EQ(run_tool({"analyze", "--db", db, "--format", "csv"}, kNoGpu).out, points);
  // Each parameter its own column, integers as integers (the first conv2d point).
  EXPECT_NE(points.find(",1,heuristic,64,graph,1,fwd,3,64,1,112,nhwc,auto,same,fp16,2,112,"),
            std::string::npos);
  EXPECT_NE(read_file(dir.file("csv/ceilings.csv")).find(",hbm_copy,bandwidth,B/s,"),
            std::string::npos);
  EXPECT_NE(read_file(dir.file("csv/kernels.csv")).find(",grid_x,grid_y,grid_z,"),
            std::string::npos);
  EXPECT_NE(read_file(dir.file("csv/kernel_counters.csv")).find(",metric,value\n"),
            std::string::npos);
  expect_one_line_error(run_tool({"export", "--db", db, "--format", "csv"}), 1, "pass --out DIR");
  expect_one_line_error(
      run_tool({"export", "--db", db, "--format", "csv", "--out", dir.file("csv/points.csv")}), 1,
      "is a file");

  const ToolResult plan =
      run_tool({"sweep", "lstm", "--batch", "1,2", "--dry-run", "--json", "--db", db}, kNoGpu);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const nlohmann::json dry = nlohmann::json::parse(plan.out);
  ASSERT_EQ(dry["points"].size(), dry["points_listed"].get<std::size_t>());
  EXPECT_GT(dry["estimated_s"].get<double>(), 0);
  EXPECT_EQ(dry["roofs"], "measured");  // the store's roofs

  const ToolResult report =
      run_tool({"report", "--db", db, "--out", dir.file("report"), "--json"}, kNoGpu);
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const nlohmann::json written = nlohmann::json::parse(report.out);
  EXPECT_EQ(written["index"], dir.file("report/index.html"));
  for (const nlohmann::json& file : written["files"])
    EXPECT_FALSE(read_file(file.get<std::string>()).empty()) << file;
}

TEST(Cli, AnalyzeReadsTheStoreAndItsErrorsAreOneLine) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  ASSERT_EQ(run_tool({"import", kSample, "--db", db}).exit_code, 0);
  const auto sample = nlohmann::json::parse(read_export_text(kSample));
  const std::string uuid = sample["runs"][0]["uuid"];
  const ToolResult one = run_tool({"analyze", uuid.substr(0, 8), "--db", db}, kNoGpu);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out.rfind("Run " + uuid.substr(0, 8), 0), 0u) << one.out.substr(0, 200);
  EXPECT_EQ(run_tool({"analyze", "--db", db}, kNoGpu).out, one.out);

  expect_one_line_error(run_tool({"analyze", "99", "--db", db}), 1, "no run '99'");
  expect_one_line_error(run_tool({"analyze", "--db", dir.file("none.db")}), 1, dir.file("none.db"));
  EXPECT_FALSE(std::ifstream(dir.file("none.db")).good()) << "a read must not create the store";
  expect_one_line_error(run_tool({"analyze", "--from", kSample, "--format", "xml"}), 1, "xml");
  expect_one_line_error(run_tool({"analyze", "--from", kSample, "--json", "--format", "csv"}), 1,
                        "--json");
  expect_one_line_error(run_tool({"analyze", "1", "--from", kSample}), 1, "not both");
  expect_one_line_error(run_tool({"analyze", "--from", dir.file("missing.json")}), 1,
                        dir.file("missing.json"));
  expect_one_line_error(run_tool({"analyze", "--from", kSample, "--out", dir.file("no/such/f")}), 1,
                        "cannot write");
}

TEST(Cli, ReadingAMissingStoreNamesThePath) {
  TempDir dir;
  expect_one_line_error(run_tool({"runs", "--db", dir.file("none.db")}), 1, dir.file("none.db"));
  EXPECT_FALSE(std::ifstream(dir.file("none.db")).good()) << "a read must not create the store";
}

TEST(Cli, ImportThenExportRoundTripsTheSampleExactly) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  ASSERT_EQ(run_tool({"import", kSample, "--db", db}).exit_code, 0);
  const ToolResult list = run_tool({"runs", "--db", db});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  const auto sample = nlohmann::json::parse(read_export_text(kSample));
  EXPECT_NE(list.out.find(sample["runs"][0]["uuid"].get<std::string>().substr(0, 8)),
            std::string::npos)
      << list.out;
  const ToolResult exported = run_tool({"export", "--db", db, "--out", dir.file("e.json")});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  // The export adds unit-labelled twins of the time counters (#20), which the
  // sample (written before them) lacks; without them it is the sample exactly.
  EXPECT_EQ(without_time_twins(nlohmann::json::parse(read_file(dir.file("e.json")))["runs"]),
            sample["runs"]);
  // The same runs again: refused, named, and nothing is added.
  expect_one_line_error(run_tool({"import", kSample, "--db", db}), 1,
                        sample["runs"][0]["uuid"].get<std::string>());
  expect_one_line_error(run_tool({"export", "99", "--db", db}), 1, "no run '99'");
}

// An --out that is the store or an input is refused before anything is written,
// whatever the path's spelling (issue 16: `export --out` of the store replaced it
// with JSON, exit 0, and every other run was lost).
TEST(Cli, OutputThatIsTheStoreOrAnInputIsRefusedAndNothingChanges) {
  TempDir dir;
  const std::string db = dir.file("s.db");
  ASSERT_EQ(run_tool({"import", kSample, "--db", db}).exit_code, 0);
  const std::string store_before = read_file(db);
  std::filesystem::create_symlink(db, dir.file("link.db"));
  const std::string other_spelling = dir.path() + "/./s.db";
  for (const std::string& out : {db, other_spelling, dir.file("link.db")}) {
    expect_one_line_error(run_tool({"export", "--db", db, "--out", out}), 1,
                          "which this command reads");
    expect_one_line_error(run_tool({"analyze", "--db", db, "--format", "csv", "--out", out}), 1,
                          "which this command reads");
    expect_one_line_error(run_tool({"report", "--db", db, "--out", out}), 1,
                          "which this command reads");
  }
  EXPECT_EQ(read_file(db), store_before);
  // An --from file is an input too.
  const std::string copy = dir.file("x.json");
  std::filesystem::copy_file(kSample, copy);
  const std::string json_before = read_file(copy);
  expect_one_line_error(run_tool({"analyze", "--from", copy, "--out", copy}), 1,
                        "which this command reads");
  expect_one_line_error(run_tool({"report", "--from", copy, "--out", copy}), 1,
                        "which this command reads");
  EXPECT_EQ(read_file(copy), json_before);
  // Another path is written as before.
  const ToolResult ok = run_tool({"export", "--db", db, "--out", dir.file("e.json")});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// SQLite's own names ("" = a temporary file, ":memory:", "file:" URIs) would take
// an import and keep nothing (issue 16: "imported 1 run(s)", exit 0).
TEST(Cli, DbNamesThatKeepNothingAreRefused) {
  for (const std::string& db : {std::string(), std::string(":memory:"), std::string("file:x.db")}) {
    expect_one_line_error(run_tool({"import", kSample, "--db", db}), 1, "is not a file path");
    expect_one_line_error(run_tool({"runs", "--db", db}), 1, "is not a file path");
  }
}

// A value nested 100,000 deep in a point's details (issue 16: import crashed at
// 30,000, analyze and report --from at 100,000) is a one-line error naming the
// limit, and the store is not created.
TEST(Cli, DeeplyNestedJsonIsRefusedWithTheLimitNotACrash) {
  TempDir dir;
  nlohmann::json doc = nlohmann::json::parse(read_export_text(kSample));
  std::string deep = "{\"format\": \"timeroof-results\", \"schema_version\": 2, \"runs\": [";
  deep += std::string(100000, '[') + std::string(100000, ']') + "]}";
  std::ofstream(dir.file("deep.json")) << deep;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"import", dir.file("deep.json"), "--db", dir.file("d.db")},
        {"analyze", "--from", dir.file("deep.json")},
        {"report", "--from", dir.file("deep.json"), "--out", dir.file("r")}})
    expect_one_line_error(run_tool(args), 1, "JSON nested deeper than 256 levels");
  EXPECT_FALSE(std::filesystem::exists(dir.file("d.db")));
  // Deep inside a real point's details, just past the limit: refused as well.
  nlohmann::json nested = 1;
  for (int i = 0; i < 300; ++i) nested = nlohmann::json::array({nested});
  doc["runs"][0]["points"][0]["details"]["deep"] = nested;
  std::ofstream(dir.file("details.json")) << doc.dump();
  expect_one_line_error(run_tool({"import", dir.file("details.json"), "--db", dir.file("d.db")}), 1,
                        "JSON nested deeper than 256 levels");
}

TEST(Cli, ImportOfABadFileIsOneLineAndImportsNothing) {
  TempDir dir;
  std::ofstream(dir.file("bad.json")) << "{not json";
  expect_one_line_error(run_tool({"import", dir.file("bad.json"), "--db", dir.file("x.db")}), 1,
                        "not valid JSON");
  std::ofstream(dir.file("foreign.json")) << R"({"a": 1})";
  expect_one_line_error(run_tool({"import", dir.file("foreign.json"), "--db", dir.file("x.db")}), 1,
                        "not a timeroof export");
}

TEST(Cli, ForeignDatabaseIsRefusedAndUntouched) {
  TempDir dir;
  const std::string path = dir.file("notes.db");
  std::ofstream(path) << "these are my notes, not a database\n";
  const std::string before = read_file(path);
  const ToolResult r = run_tool({"runs", "--db", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_EQ(read_file(path), before);
}

// Issue 16: escape sequences in an imported run's names, host or command line
// reached the terminal raw through `runs` and `analyze`. They are shown escaped;
// CSV and the export keep the original.
TEST(Cli, RunsAndAnalyzePrintNoEscapeSequencesFromTheData) {
  TempDir dir;
  const std::string hostile = "\x1b[31mred\x07";
  nlohmann::json doc = nlohmann::json::parse(read_export_text(kSample));
  nlohmann::json& run = doc["runs"][0];
  run["command_line"] = "timeroof sweep " + hostile;
  run["host"] = "host" + hostile;
  run["machine"]["gpu"]["name"] = "GPU" + hostile;
  for (nlohmann::json& point : run["points"]) {
    point["sweep"] = point["sweep"].get<std::string>() + hostile;
    point["op"] = point["op"].get<std::string>() + hostile;
    if (!point["reason"].get<std::string>().empty()) point["reason"] = "why" + hostile;
  }
  std::ofstream(dir.file("hostile.json")) << doc.dump();
  const std::string db = dir.file("h.db");
  ASSERT_EQ(run_tool({"import", dir.file("hostile.json"), "--db", db}).exit_code, 0);
  auto expect_no_raw_controls = [](const ToolResult& r, const std::string& what) {
    EXPECT_EQ(r.exit_code, 0) << what << ": " << r.err;
    for (const std::string& text : {r.out, r.err}) {
      EXPECT_EQ(text.find('\x1b'), std::string::npos) << what;
      EXPECT_EQ(text.find('\x07'), std::string::npos) << what;
    }
    EXPECT_NE(r.out.find("\\x1b[31mred\\x07"), std::string::npos) << what << ": shown escaped";
  };
  expect_no_raw_controls(run_tool({"runs", "--db", db}), "runs");
  expect_no_raw_controls(run_tool({"analyze", "--db", db}), "analyze");
  expect_no_raw_controls(run_tool({"analyze", "--from", dir.file("hostile.json")}),
                         "analyze --from");
  // CSV and JSON are data: the names as they were (CSV quotes only , " and line breaks).
  const ToolResult csv = run_tool({"analyze", "--db", db, "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.out.find(hostile), std::string::npos);
  const ToolResult exported = run_tool({"export", "--db", db});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(nlohmann::json::parse(exported.out)["runs"][0]["host"], "host" + hostile);
}

// --metrics (#20): refused before any GPU work when misspelled or unknown to CUPTI,
// and the dry run counts the passes on the store's chip.
TEST(Cli, SweepMetricsAreCheckedBeforeAnyGpuWork) {
  const TempDir dir;
  const std::string none = dir.file("none.db");
  expect_one_line_error(
      run_tool({"sweep", "conv2d", "--dry-run", "--metrics", "a,,b", "--db", none}, kNoGpu), 1,
      "timeroof metrics --filter");
  expect_one_line_error(run_tool({"sweep", "conv2d", "--metrics", "dram__bytes_read.sum",
                                  "--no-counters", "--db", none},
                                 kNoGpu),
                        1, "--no-counters");
  if (!TIMEROOF_BUILT_WITH_CUDA) GTEST_SKIP() << "analysis-only build: no CUPTI to ask";
  for (const bool dry : {true, false}) {
    std::vector<std::string> args = {"sweep",     "conv2d",
                                     "--batch",   "16",
                                     "--metrics", "dram__bytes_read.sum,sm__cycles_elapsd.avg",
                                     "--db",      none};
    if (dry) args.push_back("--dry-run");
    const ToolResult r = run_tool(args, kNoGpu);
    expect_one_line_error(r, 1, "'sm__cycles_elapsd.avg'");
    EXPECT_NE(r.err.find("timeroof metrics"), std::string::npos) << r.err;
  }

  const std::string db = dir.file("h100.db");
  ASSERT_EQ(
      run_tool({"import", "--db", db, source_dir() + "/samples/sample-run-h100.json.gz"}).exit_code,
      0);
  const ToolResult text = run_tool({"sweep", "conv2d", "--batch", "16", "--dry-run", "--metrics",
                                    "sm__throughput.avg.pct_of_peak_sustained_elapsed", "--db", db},
                                   kNoGpu);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("extra metrics: sm__throughput.avg.pct_of_peak_sustained_elapsed"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("counter passes on GH100"), std::string::npos) << text.out;
  const ToolResult json =
      run_tool({"sweep", "conv2d", "--batch", "16", "--dry-run", "--json", "--metrics",
                "sm__throughput.avg.pct_of_peak_sustained_elapsed", "--db", db},
               kNoGpu);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json plan = nlohmann::json::parse(json.out).at("extra_metrics");
  EXPECT_EQ(plan.at("chip"), "GH100");
  const nlohmann::json& passes = plan.at("passes").at(0);
  EXPECT_GT(passes.at("with_metrics").get<int>(), passes.at("catalog").get<int>()) << plan;
  // Without --metrics the dry run says nothing of them.
  const ToolResult plain =
      run_tool({"sweep", "conv2d", "--batch", "16", "--dry-run", "--json", "--db", db}, kNoGpu);
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("extra_metrics"));

  // A sweep file takes --metrics beside its own [sweep] metrics.
  write_file(dir.file("m.toml"),
             "[sweep]\nfamily = \"conv2d\"\nmetrics = [\"dram__bytes_read.sum\"]\n");
  const ToolResult file = run_tool({"sweep", dir.file("m.toml"), "--dry-run", "--json", "--metrics",
                                    "sm__cycles_elapsed.avg", "--db", db},
                                   kNoGpu);
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(nlohmann::json::parse(file.out).at("extra_metrics").at("names"),
            nlohmann::json({"dram__bytes_read.sum", "sm__cycles_elapsed.avg"}));
}

// --chip counts --metrics' passes in a dry run without a stored run (offline, as
// `metrics --chip`), and beats the store's chip; an unknown chip names the known ones.
TEST(Cli, DryRunChipCountsTheExtraPassesWithoutAStoredRun) {
  const TempDir dir;
  const std::string none = dir.file("none.db");
  const std::vector<std::string> dry = {"sweep",
                                        "conv2d",
                                        "--batch",
                                        "16",
                                        "--dry-run",
                                        "--metrics",
                                        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                        "--db",
                                        none};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = dry;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_tool(args, kNoGpu);
  };
  const ToolResult unknown = with({"--chip", "GH100"});
  if (!TIMEROOF_BUILT_WITH_CUDA) {
    expect_one_line_error(unknown, 2, "no CUPTI");
    return;
  }
  const ToolResult without = with({"--json"});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_NE(nlohmann::json::parse(without.out)
                .at("extra_metrics")
                .at("why_no_passes")
                .get<std::string>()
                .find("--chip"),
            std::string::npos);
  for (const std::string chip : {"GH100", "GA100"}) {
    const ToolResult json = with({"--chip", chip, "--json"});
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const nlohmann::json plan = nlohmann::json::parse(json.out).at("extra_metrics");
    EXPECT_EQ(plan.at("chip"), chip);
    const nlohmann::json& passes = plan.at("passes").at(0);
    EXPECT_GT(passes.at("with_metrics").get<int>(), passes.at("catalog").get<int>()) << plan;
  }
  const ToolResult text = with({"--chip", "GH100"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("counter passes on GH100"), std::string::npos) << text.out;
  // --chip over the store's chip (an H100 run: GH100).
  const std::string db = dir.file("h100.db");
  ASSERT_EQ(
      run_tool({"import", "--db", db, source_dir() + "/samples/sample-run-h100.json.gz"}).exit_code,
      0);
  std::vector<std::string> args = dry;
  args.back() = db;
  args.insert(args.end(), {"--chip", "GA100", "--json"});
  const ToolResult over = run_tool(args, kNoGpu);
  ASSERT_EQ(over.exit_code, 0) << over.err;
  EXPECT_EQ(nlohmann::json::parse(over.out).at("extra_metrics").at("chip"), "GA100");
  expect_one_line_error(with({"--chip", "GH999"}), 1, "GH100");
  expect_one_line_error(run_tool({"sweep", "conv2d", "--chip", "GH100", "--db", none}, kNoGpu), 1,
                        "--dry-run");
}

// A point that stored extra metrics (built by hand here; tests/gpu/cli_metrics_test
// measures one) shows them in export's JSON and kernel_counters.csv and in analyze's JSON.
TEST(Cli, StoredExtraMetricsReachExportAndAnalyze) {
  const TempDir dir;
  const std::string metric = "sm__warps_active.avg.pct_of_peak_sustained_active";
  nlohmann::json doc =
      nlohmann::json::parse(read_export_text(source_dir() + "/samples/sample-run-h100.json.gz"));
  nlohmann::json& point = doc["runs"][0]["points"][0];
  ASSERT_FALSE(point["kernels"].empty());
  for (std::size_t k = 0; k < point["kernels"].size(); ++k)
    point["kernels"][k]["metrics"][metric] = 40.0 + static_cast<double>(k);
  point["counters"][metric] = 41.25;
  point["details"]["counters"]["extra_metrics"] = nlohmann::json::array(
      {nlohmann::json{{"name", metric}, {"total", "duration_weighted_mean"}}});
  write_file(dir.file("run.json"), doc.dump());
  const std::string db = dir.file("x.db");
  ASSERT_EQ(run_tool({"import", "--db", db, dir.file("run.json")}).exit_code, 0);

  const ToolResult exported = run_tool({"export", "--db", db});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const nlohmann::json back = nlohmann::json::parse(exported.out)["runs"][0]["points"][0];
  EXPECT_EQ(back["counters"][metric], 41.25);
  EXPECT_EQ(back["kernels"][0]["metrics"][metric], 40.0);

  ASSERT_EQ(run_tool({"export", "--db", db, "--format", "csv", "--out", dir.file("csv")}).exit_code,
            0);
  const std::string csv = read_file(dir.file("csv/kernel_counters.csv"));
  EXPECT_EQ(count_occurrences(csv, "," + metric + ","), point["kernels"].size())
      << csv.substr(0, 300);

  const ToolResult analysed =
      run_tool({"analyze", "--from", dir.file("run.json"), "--format", "json"}, kNoGpu);
  ASSERT_EQ(analysed.exit_code, 0) << analysed.err;
  bool found = false;
  const nlohmann::json analysis = nlohmann::json::parse(analysed.out);
  for (const nlohmann::json& p : analysis["runs"][0]["points"]) {
    if (!p.contains("extra_metrics")) continue;
    found = true;
    EXPECT_EQ(p["sweep"], point["sweep"]);
    EXPECT_EQ(p["seq"], point["seq"]);
    EXPECT_EQ(p["extra_metrics"][metric]["total"], 41.25);
    EXPECT_EQ(p["extra_metrics"][metric]["total_is"], "duration_weighted_mean");
    EXPECT_EQ(p["extra_metrics"][metric]["per_kernel"][0], 40.0);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace timeroof::test
