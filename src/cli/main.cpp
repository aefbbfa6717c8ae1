// The timeroof command line. The one place that catches: every error below
// becomes one line on stderr and the exit code of docs/design.md.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/format.hpp"
#include "src/cli/command_options.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/sweep_backend.hpp"
#include "timeroof/version.hpp"

namespace {

using timeroof::cli::CommonOptions;

using timeroof::cli::add_devices;

void add_common(CLI::App& command, CommonOptions& options, bool uses_db, bool uses_device,
                bool uses_out) {
  if (uses_db) timeroof::cli::add_db(command, options);
  timeroof::cli::add_json(command, options);
  if (uses_device) timeroof::cli::add_device(command, options);
  if (uses_out) timeroof::cli::add_out(command, options);
}

// A one-line usage error in the tool's own voice, with the fix.
int usage_failure(const CLI::Error& error, const CLI::App& app) {
  std::string message = error.what();
  if (!message.empty() && message.back() == '\n') message.pop_back();
  std::string command = "timeroof";
  for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
  std::fprintf(stderr, "timeroof: %s; see `%s --help`\n", message.c_str(), command.c_str());
  return static_cast<int>(timeroof::ExitCode::usage);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  CommonOptions options;
  options.command_line = timeroof::shell_join(args);

  CLI::App app{
      "timeroof: why a deep-learning operator takes the time it takes.\n"
      "Measures the GPU's real ceilings, reads CUPTI counters, and draws classic and\n"
      "time-based Roofline charts.",
      "timeroof"};
  app.set_version_flag("--version", std::string("timeroof ") + timeroof::kToolVersion + " (" +
                                        timeroof::kGitSha + ")");
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  timeroof info                 GPU, clocks, library versions, counter access\n"
      "  timeroof run                  the main job: measure, store, report\n"
      "  timeroof runs                 runs in ./timeroof.db\n"
      "  timeroof export --out r.json  all runs as JSON\n"
      "  timeroof merge all.db s*.db   join the stores of sweep shards (--shard I/N)\n"
      "  timeroof report --out DIR     HTML and Markdown report of the stored runs\n\n"
      "Exit codes: 0 ok, 1 usage or input error, 2 environment (no GPU, no counter\n"
      "permission), 3 partial results.");

  CLI::App* info = app.add_subcommand(
      "info",
      "GPU, chip, clocks, driver/CUDA/cuDNN/CUPTI versions, and whether hardware "
      "counters can be read (and why not)");
  add_common(*info, options, false, true, false);
  info->footer(
      "Examples:\n  timeroof info\n  timeroof info --device 1 --json\n\n"
      "Exit code 2 when there is no GPU; counters being unavailable is reported, not an error.");

  CLI::App* run = app.add_subcommand(
      "run",
      "The main job: describe the GPU, measure its roofs, run the default conv2d and lstm "
      "sweeps, store everything as one run, and print the summary");
  add_common(*run, options, true, true, true);
  add_devices(*run, options,
              "GPUs to use at once, all or 0,2,5: the roofs of each GPU (one run per GPU), the "
              "interconnect between them, and the sweeps' points spread over all of them");
  run->footer(
      "Examples:\n  timeroof run\n  timeroof run --device 1 --db results/h200.db\n"
      "  timeroof run --devices all\n\n"
      "It ends with the report (index.html, report.md and the charts) written into --out\n"
      "(default ./timeroof-report) and prints the path of index.html as its last line.\n"
      "Without a GPU it says why in one line and shows the bundled sample, a real run\n"
      "recorded on an H100/H200, instead (exit code 0): its summary and its report.");

  bool quick = false;
  std::vector<std::string> only;
  CLI::App* ceilings = app.add_subcommand(
      "ceilings",
      "Measure the GPU's roofs with timeroof's own kernels (CUDA-core and Tensor-Core "
      "FLOP/s, HBM/L2/L1/shared bandwidth, transfers, launch cost) and the cuBLASLt "
      "reference, store them as a run, and print measured vs theoretical");
  add_common(*ceilings, options, true, true, false);
  add_devices(*ceilings, options,
              "GPUs to measure at once, all or 0,2,5: one run per GPU, plus the interconnect "
              "roofs between them (P2P copies and latency, NCCL all-reduce)");
  ceilings->add_flag("--quick", quick, "reduced sizes and repeats (under 20 s)");
  ceilings->add_option("--only", only, "roofs to measure, e.g. --only hbm_copy,fp32_fma")
      ->delimiter(',');
  ceilings->footer(
      "Examples:\n  timeroof ceilings\n  timeroof ceilings --quick\n"
      "  timeroof ceilings --only hbm_copy,l2_read,tensor_bf16 --json\n"
      "  timeroof ceilings --devices all --quick\n\n"
      "Theoretical = CUPTI .peak_sustained x the clock observed during each measurement.\n"
      "Exit code 3 when a roof failed (the others are kept).");

  timeroof::cli::Action action;  // set by the commands registered with a register function
  timeroof::cli::register_sweep(app, options, action);

  // Hidden: the timing worker a sweep starts (sweeps/timing_worker.hpp).
  int worker_device = 0;
  CLI::App* timing_worker = app.add_subcommand("timing-worker", "");
  timing_worker->group("");
  timing_worker->add_option("--device", worker_device, "GPU index");
  // Hidden: a worker of --devices (src/cli/devices.hpp).
  CLI::App* device_worker = app.add_subcommand("device-worker", "");
  device_worker->group("");
  device_worker->add_option("--device", worker_device, "GPU index");

  std::string chip;
  std::string metric_filter;
  std::vector<std::string> passes_for;
  CLI::App* metrics = app.add_subcommand(
      "metrics",
      "List a chip's CUPTI metrics, or count the replay passes a metric set needs "
      "(offline: no GPU needed with --chip)");
  add_common(*metrics, options, false, true, false);
  metrics->add_option("--chip", chip, "CUPTI chip name, e.g. GH100 (default: this GPU's chip)");
  metrics->add_option("--filter", metric_filter, "only names containing this text");
  metrics->add_option("--passes", passes_for, "count passes for these metrics (comma-separated)")
      ->delimiter(',');
  metrics->footer(
      "Examples:\n  timeroof metrics --chip GH100 --filter dram__bytes\n"
      "  timeroof metrics --chip GA100 --passes dram__bytes_read.sum,lts__t_bytes.sum\n"
      "  timeroof metrics --filter tensor_op_hgmma --json");

  CLI::App* runs = app.add_subcommand("runs", "List the runs in the results store");
  add_common(*runs, options, true, false, false);
  runs->footer("Examples:\n  timeroof runs\n  timeroof runs --db results/h200.db --json");

  std::vector<std::string> export_runs;
  CLI::App* exporter = app.add_subcommand(
      "export",
      "Write runs (all, or those named by id or uuid prefix) as a versioned JSON "
      "document for pandas and friends");
  add_common(*exporter, options, true, false, true);
  exporter->add_option("runs", export_runs, "run ids or uuid prefixes (default: all)");
  exporter->footer(
      "Examples:\n  timeroof export > all.json\n  timeroof export 3 --out run3.json\n"
      "  timeroof export 1f0c --db other.db");

  std::vector<std::string> import_files;
  CLI::App* importer = app.add_subcommand(
      "import", "Add runs from JSON files written by `timeroof export` to the results store");
  add_common(*importer, options, true, false, false);
  importer->add_option("files", import_files, "export files")->required()->check(CLI::ExistingFile);
  importer->footer("Examples:\n  timeroof import h100.json h200.json --db all.db");

  std::string merge_out;
  std::vector<std::string> merge_inputs;
  CLI::App* merge = app.add_subcommand(
      "merge",
      "Join the shard runs of a job (`sweep --shard I/N`, one store per shard) from several "
      "stores into one run in OUT, with which shard, host and GPU measured each point; other "
      "runs are copied unchanged");
  merge->add_flag("--json", options.json, "the merged runs as JSON on stdout");
  merge->add_option("out", merge_out, "the store to write (created if absent)")->required();
  merge->add_option("inputs", merge_inputs, "the shards' stores")
      ->required()
      ->check(CLI::ExistingFile);
  merge->footer(
      "Examples:\n  timeroof merge all.db shard-0.db shard-1.db shard-2.db shard-3.db\n"
      "  timeroof merge all.db shard-*.db && timeroof report --db all.db\n\n"
      "Shards of one job share the command apart from --shard. Refused, nothing written: a\n"
      "point in two shards, shards with different specs or counts, a shard index twice,\n"
      "shards on different GPU models, OUT among the inputs. A merged run missing points\n"
      "is stored as partial, named on stderr, with exit code 3.");

  std::vector<std::string> report_runs;
  std::vector<std::string> report_from;
  std::string report_format = "svg";
  CLI::App* report = app.add_subcommand(
      "report",
      "Write the HTML and Markdown report of runs (all, or those named by id or uuid "
      "prefix) from the results store or from export files; no GPU needed");
  add_common(*report, options, true, false, false);
  report->add_option("runs", report_runs, "run ids or uuid prefixes (default: all)");
  report->add_option("--from", report_from, "read the runs from these export files, not the store")
      ->excludes(report->get_option("--db"));  // one source: --db was silently ignored
  report->add_option("--out", options.out, "output directory (default: ./timeroof-report)");
  report->add_option("--format", report_format,
                     "chart files report.md references: svg (default), png or pdf (converted "
                     "from the SVGs with rsvg-convert, package librsvg2-bin)");
  report->footer(
      "Examples:\n  timeroof report\n  timeroof report 3 --out reports/h200\n"
      "  timeroof report --from samples/sample-run.json --out /tmp/sample-report\n"
      "  timeroof report --format png --out slides\n\n"
      "Writes DIR/index.html (self-contained: inline SVG and CSS, no network, no\n"
      "JavaScript), DIR/report.md and its SVG charts (plus PNG or PDF copies that\n"
      "report.md references, with --format), and prints the path of index.html.");

  std::vector<std::string> analyze_runs;
  std::vector<std::string> analyze_from;
  std::string analyze_format;
  CLI::App* analyze = app.add_subcommand(
      "analyze",
      "Print the model's analysis of runs (all, or those named by id or uuid prefix) from "
      "the results store or from export files: per point the time bounds, limiting roof, "
      "bottleneck class, efficiency and lower bound; per series the fit; the ranked "
      "findings. No GPU needed");
  add_common(*analyze, options, true, false, false);
  analyze->add_option("runs", analyze_runs, "run ids or uuid prefixes (default: all)");
  analyze
      ->add_option("--from", analyze_from,
                   "read the runs from these export files, not the store")
      ->excludes(analyze->get_option("--db"));  // one source: --db was silently ignored
  analyze->add_option("--format", analyze_format, "table (default), json (everything) or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}));
  analyze->add_option("--out", options.out, "write to this file instead of stdout");
  analyze->footer(
      "Examples:\n  timeroof analyze\n  timeroof analyze 3 --format csv --out run3.csv\n"
      "  timeroof analyze --from samples/sample-run.json --format json | jq '.runs[0].findings'\n\n"
      "Table: one table of points per sweep (times per call; n/m = L1 not measured\n"
      "meaningfully, TMA), then per series the robust fit T = a + c x batch and its knee,\n"
      "then the findings ranked by the share of their series' time they explain.\n"
      "CSV: one row per point, every parameter a column. JSON: the whole structure.");

  // Name an unknown command instead of CLI11's generic "subcommand required".
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      found = found || sub->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::fprintf(stderr, "timeroof: unknown command '%s' (commands: %s); see `timeroof --help`\n",
                   argv[1], known.c_str());
      return static_cast<int>(timeroof::ExitCode::usage);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& done) {  // --help, --help-all, --version
    return app.exit(done);
  } catch (const CLI::ParseError& error) {
    return usage_failure(error, app);
  }

  try {
    timeroof::ExitCode code = timeroof::ExitCode::ok;
    if (*info) code = timeroof::cli::run_info(options);
    if (*run) code = timeroof::cli::run_main_job(options);
    if (*ceilings) code = timeroof::cli::run_ceilings(options, quick, only);
    if (action) code = action();
    if (*timing_worker) code = timeroof::cli::serve_timing_worker(worker_device);
    if (*device_worker) code = timeroof::cli::serve_device_worker(worker_device);
    if (*metrics) code = timeroof::cli::run_metrics(options, chip, metric_filter, passes_for);
    if (*runs) code = timeroof::cli::run_list_runs(options);
    if (*exporter) code = timeroof::cli::run_export(options, export_runs);
    if (*importer) code = timeroof::cli::run_import(options, import_files);
    if (*merge) code = timeroof::cli::run_merge(options, merge_out, merge_inputs);
    if (*report) code = timeroof::cli::run_report(options, report_runs, report_from, report_format);
    if (*analyze)
      code = timeroof::cli::run_analyze(options, analyze_runs, analyze_from, analyze_format);
    return static_cast<int>(code);
  } catch (const timeroof::Error& error) {
    // Messages quote names from files and stores: one line, nothing the terminal acts on.
    std::fprintf(stderr, "timeroof: %s\n", timeroof::terminal_safe(error.what()).c_str());
    return static_cast<int>(error.code());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "timeroof: internal error: %s\n",
                 timeroof::terminal_safe(error.what()).c_str());
    return static_cast<int>(timeroof::ExitCode::environment);
  }
}
