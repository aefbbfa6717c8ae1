#include "src/cli/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <utility>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/ceiling_names.hpp"
#include "core/format.hpp"
#include "core/gzip.hpp"
#include "core/json_io.hpp"
#include "core/vocabulary.hpp"
#include "plots/perfetto_trace.hpp"
#include "plots/profile_report.hpp"
#include "plots/report.hpp"
#include "roofline/analysis.hpp"
#include "src/cli/command_options.hpp"
#include "src/cli/console.hpp"
#include "src/cli/devices.hpp"
#include "src/cli/export_csv.hpp"
#include "src/cli/gpu_backend.hpp"
#include "src/cli/merge.hpp"
#include "src/cli/stored_runs.hpp"
#include "src/cli/sweep_backend.hpp"
#include "src/store/results_store.hpp"
#include "sweeps/family.hpp"

namespace timeroof::cli {

namespace {

// `runs`: one line per run, or with --json an array of runs with their store ids.
void print_run_list(const CommonOptions& options, const std::vector<Run>& runs) {
  if (!options.json) {
    std::cout << format_run_list(runs);
    return;
  }
  nlohmann::json list = nlohmann::json::array();
  for (const Run& run : runs) {
    nlohmann::json entry = run;
    entry["id"] = run.id;
    list.push_back(std::move(entry));
  }
  print_json(list);
}

// The runs `ids` (ids or uuid prefixes) of `store`, every run without ids; a
// usage error naming an id the store (the file `db`) does not hold.
std::vector<RunRecord> load_store_runs(ResultsStore& store, const std::string& db,
                                       const std::vector<std::string>& ids) {
  if (ids.empty()) return store.load_all();
  std::vector<RunRecord> records;
  for (const std::string& id : ids) {
    std::optional<RunRecord> record = store.load_run(id);
    if (!record)
      throw usage_error("no run '" + id + "' in " + db + "; list the runs with `timeroof runs`");
    records.push_back(std::move(*record));
  }
  return records;
}

}  // namespace

std::vector<RunRecord> read_export_file(const std::string& path) {
  // As a sweep spec or a store: a FIFO would block the read forever, a device
  // never end, and a directory reads as nothing.
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw usage_error(path +
                      " is not a regular file (a directory, FIFO or device); pass a file written "
                      "by `timeroof export`");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw usage_error("cannot read " + path + "; check the path");
  const std::string fix = "pass a file written by `timeroof export`";
  const std::string text = inflate_if_gzip(
      {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()}, path, fix);
  return parse_export_document(parse_untrusted_json(text, path, fix), path);
}

std::vector<RunRecord> load_runs(const CommonOptions& options, const std::vector<std::string>& runs,
                                 const std::vector<std::string>& from) {
  if (!from.empty()) {
    if (!runs.empty()) {
      throw usage_error("name runs from the store or read --from files, not both; drop '" +
                        runs.front() + "' or --from");
    }
    std::vector<RunRecord> records;
    for (const std::string& file : from) {
      std::vector<RunRecord> parsed = read_export_file(file);
      records.insert(records.end(), parsed.begin(), parsed.end());
    }
    if (records.empty()) throw usage_error("no runs in " + from.front());
    return records;
  }
  ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_only);
  std::vector<RunRecord> records = load_store_runs(store, options.db, runs);
  if (records.empty()) {
    throw usage_error("no runs in " + options.db +
                      "; measure with `timeroof run` or add runs with `timeroof import`");
  }
  return records;
}

void attach_profile_roofs(std::vector<RunRecord>& records, const CommonOptions& options,
                          const std::vector<std::string>& from) {
  if (std::none_of(records.begin(), records.end(),
                   [](const RunRecord& r) { return !r.trace.empty(); }))
    return;
  std::vector<Run> candidates;
  if (from.empty()) {
    candidates = ResultsStore::open(options.db, ResultsStore::Access::read_only).list_runs();
  } else {
    for (const RunRecord& r : records) candidates.push_back(r.run);
  }
  for (RunRecord& r : records)
    if (!r.trace.empty()) roofline::attach_profile_roofs(r, candidates);
}

ExitCode run_info(const CommonOptions& options) {
  const GpuAvailability gpus = find_gpus();
  if (gpus.count == 0) throw environment_error("no GPU: " + gpus.why_none);
  const GpuInfo gpu = inspect_gpu(options.device);
  if (options.json)
    print_json(gpu);
  else
    std::cout << format_gpu(gpu);
  return ExitCode::ok;
}

void register_info(CLI::App& app, CommonOptions& options, Action& action) {
  CLI::App* command = app.add_subcommand(
      "info",
      "GPU, chip, clocks, driver/CUDA/cuDNN/CUPTI versions, and whether hardware "
      "counters can be read (and why not)");
  add_json(*command, options);
  add_device(*command, options);
  command->footer(
      "Examples:\n  timeroof info\n  timeroof info --device 1 --json\n\n"
      "Exit code 2 when there is no GPU; counters being unavailable is reported, not an error.");
  when_chosen(*command, action, [&options] { return run_info(options); });
}

// Hidden: the timing worker a sweep starts (sweeps/timing_worker.hpp), and a
// worker of --devices (src/cli/devices.hpp).
void register_workers(CLI::App& app, Action& action) {
  auto device = std::make_shared<int>(0);
  CLI::App* timing = app.add_subcommand("timing-worker", "");
  timing->group("");
  timing->add_option("--device", *device, "GPU index");
  when_chosen(*timing, action, [device] { return serve_timing_worker(*device); });
  CLI::App* worker = app.add_subcommand("device-worker", "");
  worker->group("");
  worker->add_option("--device", *device, "GPU index");
  when_chosen(*worker, action, [device] { return serve_device_worker(*device); });
}

ExitCode run_metrics(const CommonOptions& options, std::string chip, const std::string& filter,
                     const std::vector<std::string>& passes_for, bool profile_plan) {
  if (!built_with_cuda()) throw environment_error(find_gpus().why_none);
  if (chip.empty()) {
    const GpuAvailability gpus = find_gpus();
    if (gpus.count == 0) {
      throw usage_error("no GPU here to take the chip from; pass --chip NAME (" +
                        join_list(supported_chips()) + ")");
    }
    chip = inspect_gpu(options.device).chip;
  }
  if (profile_plan) {
    // One name a line on stdout (for ncu: `paste -sd,`), the count on stderr.
    const ProfileMetricPlan plan = profile_metric_plan(chip);
    if (options.json) {
      print_json({{"chip", chip}, {"metrics", plan.metrics}, {"passes", plan.passes}});
    } else {
      for (const std::string& name : plan.metrics) std::cout << name << '\n';
      std::cerr << "timeroof profile collects " << plan.metrics.size()
                << " metric(s) per measured kernel on " << chip << " in " << plan.passes
                << " replay pass(es)\n";
    }
    return ExitCode::ok;
  }
  if (!passes_for.empty()) {
    const std::size_t passes = count_passes(chip, passes_for);
    if (options.json)
      print_json({{"chip", chip}, {"metrics", passes_for}, {"passes", passes}});
    else
      std::cout << chip << ": " << passes_for.size() << " metric(s) need " << passes
                << " replay pass(es)\n";
    return ExitCode::ok;
  }
  std::vector<MetricDescription> metrics;
  for (MetricDescription& m : chip_metrics(chip))
    if (m.name.find(filter) != std::string::npos) metrics.push_back(std::move(m));
  std::sort(metrics.begin(), metrics.end(),
            [](const MetricDescription& a, const MetricDescription& b) { return a.name < b.name; });
  if (options.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const MetricDescription& m : metrics)
      list.push_back({{"name", m.name},
                      {"type", m.type},
                      {"unit", m.unit},
                      {"hw_unit", m.hw_unit},
                      {"description", m.description}});
    print_json({{"chip", chip}, {"metrics", list}});
  } else {
    // One metric a line: the name, the unit of its values, CUPTI's description.
    std::size_t name_width = 0, unit_width = 0;
    for (const MetricDescription& m : metrics) {
      name_width = std::max(name_width, m.name.size());
      unit_width = std::max(unit_width, m.unit.size());
    }
    for (const MetricDescription& m : metrics) {
      std::string line = m.name + std::string(name_width - m.name.size() + 2, ' ') + m.unit +
                         std::string(unit_width - m.unit.size() + 2, ' ') + m.description;
      while (!line.empty() && line.back() == ' ') line.pop_back();
      std::cout << terminal_safe(line) << '\n';
    }
    std::cerr << metrics.size() << " base metric(s) on " << chip
              << "; add a rollup such as .sum, .avg, .max or .sum.peak_sustained\n";
  }
  return ExitCode::ok;
}

void register_metrics(CLI::App& app, CommonOptions& options, Action& action) {
  struct Arguments {
    std::string chip;
    std::string filter;
    std::vector<std::string> passes_for;
    bool profile_plan = false;
  };
  auto args = std::make_shared<Arguments>();
  CLI::App* command = app.add_subcommand(
      "metrics",
      "List a chip's CUPTI metrics with the unit of their values and CUPTI's description, or "
      "count the replay passes a metric set needs (offline: no GPU needed with --chip)");
  add_json(*command, options);
  add_device(*command, options);
  command->add_option("--chip", args->chip,
                      "CUPTI chip name, e.g. GH100 (default: this GPU's chip)");
  command->add_option("--filter", args->filter, "only names containing this text");
  CLI::Option* passes = command
                            ->add_option("--passes", args->passes_for,
                                         "count passes for these metrics (comma-separated)")
                            ->delimiter(',');
  command
      ->add_flag("--profile-plan", args->profile_plan,
                 "the metrics `timeroof profile` collects per measured kernel, and their passes")
      ->excludes(passes);
  command->footer(
      "Examples:\n  timeroof metrics --chip GH100 --filter dram__bytes\n"
      "  timeroof metrics --chip GA100 --passes dram__bytes_read.sum,lts__t_bytes.sum\n"
      "  timeroof metrics --filter tensor_op_hgmma --json\n"
      "  ncu --metrics $(timeroof metrics --chip GH100 --profile-plan | paste -sd,) ./app");
  when_chosen(*command, action, [&options, args] {
    return run_metrics(options, args->chip, args->filter, args->passes_for, args->profile_plan);
  });
}

ExitCode run_list_runs(const CommonOptions& options) {
  ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_only);
  print_run_list(options, store.list_runs());
  return ExitCode::ok;
}

void register_list_runs(CLI::App& app, CommonOptions& options, Action& action) {
  CLI::App* command = app.add_subcommand("runs", "List the runs in the results store");
  add_db(*command, options);
  add_json(*command, options);
  command->footer("Examples:\n  timeroof runs\n  timeroof runs --db results/h200.db --json");
  when_chosen(*command, action, [&options] { return run_list_runs(options); });
}

namespace {

// `export --perfetto FILE`: one profile run's trace as a Perfetto / Chrome trace.
ExitCode export_perfetto(const CommonOptions& options, const std::vector<std::string>& runs,
                         const std::string& file) {
  refuse_overwriting(file, {options.db}, "--perfetto");
  ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_only);
  std::vector<RunRecord> records = load_store_runs(store, options.db, runs);
  std::erase_if(records, [](const RunRecord& r) { return r.trace.empty(); });
  if (records.size() != 1)
    throw usage_error("export --perfetto writes the trace of one run made by `timeroof profile`; " +
                      std::string(records.empty()
                                      ? "none of the runs named holds a trace"
                                      : std::to_string(records.size()) + " runs hold one") +
                      ": name the run (see `timeroof runs`)");
  roofline::attach_profile_roofs(records.front(), store.list_runs());
  const RunRecord& record = records.front();
  const plots::KernelRateMap rates = plots::kernel_rates(
      roofline::analyze_profile(record.trace, roofline::profile_options(record)));
  write_output(
      file,
      plots::perfetto_trace(record.trace, plots::profile_provenance(record), rates).dump() + "\n",
      {options.db}, "--perfetto");
  std::cerr << "wrote " << file << ": " << record.trace.size() << " trace records of run "
            << record.run.id << " (open it in https://ui.perfetto.dev or chrome://tracing)\n";
  return ExitCode::ok;
}

}  // namespace

ExitCode run_export(const CommonOptions& options, const std::vector<std::string>& runs,
                    const std::string& requested_format, const std::string& perfetto) {
  if (!perfetto.empty()) {
    if (!requested_format.empty() || !options.out.empty())
      throw usage_error("export --perfetto FILE writes one file; drop --format and --out");
    return export_perfetto(options, runs, perfetto);
  }
  const std::string format = table_json_or_csv(options.json, requested_format, "json");
  namespace fs = std::filesystem;
  if (format == "csv") {  // checked before any reading
    if (options.out.empty())
      throw usage_error(
          "export --format csv writes one file per table (points.csv, kernels.csv, "
          "kernel_counters.csv, ceilings.csv); pass --out DIR");
    std::error_code error;
    if (fs::exists(options.out, error) && !fs::is_directory(options.out, error))
      throw usage_error("--out " + options.out +
                        " is a file; export --format csv writes a directory of CSV files: pass "
                        "--out DIR (created if absent)");
  }
  ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_only);
  const std::vector<RunRecord> records = load_store_runs(store, options.db, runs);
  if (format == "json") {
    const std::string text = export_document(records).dump(2) + "\n";
    write_output(options.out, options.out.ends_with(".gz") ? gzip_compress(text) : text,
                 {options.db});
    return ExitCode::ok;
  }
  std::vector<roofline::RunAnalysis> analyses;
  for (const RunRecord& record : records) analyses.push_back(roofline::analyze(record));
  std::error_code error;
  fs::create_directories(options.out, error);
  if (error)
    throw usage_error("cannot create " + options.out + " (" + error.message() +
                      "); pass --out a directory you can write");
  for (const CsvTable& table : export_tables(records, analyses)) {
    const std::string path = (fs::path(options.out) / (table.name + ".csv")).string();
    write_output(path, csv_text(table), {options.db});
    std::cout << path << '\n';
  }
  return ExitCode::ok;
}

void register_export(CLI::App& app, CommonOptions& options, Action& action) {
  struct Arguments {
    std::vector<std::string> runs;
    std::string format;
    std::string perfetto;
  };
  auto args = std::make_shared<Arguments>();
  CLI::App* command = app.add_subcommand(
      "export",
      "Write runs (all, or those named by id or uuid prefix) as a versioned JSON "
      "document, or as tidy CSV tables, for pandas and friends");
  add_db(*command, options);
  add_json(*command, options);
  command->add_option("--out", options.out,
                      "json: a file (default stdout; gzip-compressed when it ends in .gz); csv: a "
                      "directory (required)");
  command->add_option("--format", args->format, "json (default) or csv")
      ->check(CLI::IsMember({"json", "csv"}));
  command->add_option("--perfetto", args->perfetto,
                      "instead: the trace of one profile run (`timeroof profile`) as Chrome "
                      "trace / Perfetto JSON into this file");
  command->add_option("runs", args->runs, "run ids or uuid prefixes (default: all)");
  command->footer(
      "Examples:\n  timeroof export > all.json\n  timeroof export 3 --out run3.json\n"
      "  timeroof export --out all.json.gz\n"
      "  timeroof export 4 --perfetto step.json\n"
      "  timeroof export 1f0c --db other.db\n  timeroof export --format csv --out tables\n\n"
      "JSON: every measurement of the runs, {\"format\": \"timeroof-results\",\n"
      "\"schema_version\", \"runs\"}; its schema is docs/schemas/export.schema.json.\n"
      "CSV: tidy tables written into DIR, their paths printed: points.csv (one row per\n"
      "point: run, GPU, params, times, work, bytes per level, intensities, rates, the\n"
      "model's bounds and class), kernels.csv (one row per kernel), kernel_counters.csv\n"
      "(one row per kernel and counter) and ceilings.csv (one row per roof). Units are in\n"
      "the column names (_s, _bytes, _flop_per_s, ...), integers are written as integers,\n"
      "a value not measured is an empty cell.");
  when_chosen(*command, action, [&options, args] {
    return run_export(options, args->runs, args->format, args->perfetto);
  });
}

ExitCode run_import(const CommonOptions& options, const std::vector<std::string>& files) {
  // Parse every file before touching the store: a bad file imports nothing.
  std::vector<RunRecord> records;
  for (const std::string& file : files) {
    std::vector<RunRecord> parsed = read_export_file(file);
    records.insert(records.end(), parsed.begin(), parsed.end());
  }
  ResultsStore::refuse_duplicate_runs(options.db, records);
  ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_write);
  store.import_runs(records);
  std::cerr << "imported " << records.size() << " run(s) into " << options.db << "\n";
  if (options.json) {  // the ids the store gave them, in the order of the files
    nlohmann::json imported = nlohmann::json::array();
    const std::vector<Run> stored = store.list_runs();
    for (const RunRecord& record : records)
      for (const Run& run : stored)
        if (run.uuid == record.run.uuid)
          imported.push_back({{"id", run.id},
                              {"uuid", run.uuid},
                              {"gpu_name", run.machine.gpu.name},
                              {"started_at", run.started_at},
                              {"status", run.status},
                              {"points", record.points.size()}});
    print_json({{"db", options.db}, {"runs", imported}});
  }
  return ExitCode::ok;
}

void register_import(CLI::App& app, CommonOptions& options, Action& action) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* command = app.add_subcommand(
      "import",
      "Add runs from JSON files written by `timeroof export` (plain or .gz) to the results store");
  add_db(*command, options);
  add_json(*command, options);
  command->add_option("files", *files, "export files")->required()->check(CLI::ExistingFile);
  command->footer(
      "Examples:\n  timeroof import h100.json h200.json --db all.db\n"
      "  timeroof import run.json --db new.db --json\n\n"
      "--json: {\"db\", \"runs\": [{\"id\", \"uuid\", \"gpu_name\", \"started_at\", \"status\",\n"
      "\"points\"}]} on stdout, the ids the store gave the imported runs.");
  when_chosen(*command, action, [&options, files] { return run_import(options, *files); });
}

ExitCode run_merge(const CommonOptions& options, const std::string& out,
                   const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  auto same_file = [](const std::string& a, const std::string& b) {
    std::error_code error;
    return fs::exists(a, error) && fs::exists(b, error)
               ? fs::equivalent(a, b, error)
               : fs::weakly_canonical(a, error) == fs::weakly_canonical(b, error);
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (same_file(out, inputs[i]))
      throw usage_error("merge: " + out + " is both the output and an input (" + inputs[i] +
                        "); write the merge to a new store, e.g. merged.db");
    for (std::size_t j = 0; j < i; ++j)
      if (same_file(inputs[i], inputs[j]))
        throw usage_error("merge: " + inputs[j] + " is given twice (also as " + inputs[i] +
                          "); pass each store once");
  }
  // Read and merge everything before touching OUT: a refused merge writes nothing.
  std::vector<SourcedRun> runs;
  for (const std::string& input : inputs) {
    ResultsStore store = ResultsStore::open(input, ResultsStore::Access::read_only);
    for (RunRecord& record : store.load_all()) runs.push_back({input, std::move(record)});
  }
  const MergeOutcome merged = merge_shard_runs(runs, options.command_line);
  ResultsStore store = ResultsStore::open(out, ResultsStore::Access::read_write);
  store.import_runs(merged.runs);  // one transaction
  for (const std::string& note : merged.notes)
    std::cerr << "timeroof: " << terminal_safe(note) << "\n";  // quotes stored command lines
  std::vector<Run> listed;
  for (std::size_t i = 0; i < static_cast<std::size_t>(merged.merged_jobs); ++i)
    listed.push_back(store.load_run(merged.runs[i].run.uuid)->run);
  if (options.json || !listed.empty()) print_run_list(options, listed);
  std::cerr << "merged " << merged.shard_runs << " shard run(s) into " << merged.merged_jobs
            << " run(s) and copied " << merged.runs.size() - listed.size() << " other run(s) into "
            << out << "\n";
  return std::any_of(listed.begin(), listed.end(),
                     [](const Run& run) { return run.status != to_string(RunStatus::complete); })
             ? ExitCode::partial
             : ExitCode::ok;
}

void register_merge(CLI::App& app, CommonOptions& options, Action& action) {
  struct Arguments {
    std::string out;
    std::vector<std::string> inputs;
  };
  auto args = std::make_shared<Arguments>();
  CLI::App* command = app.add_subcommand(
      "merge",
      "Join the shard runs of a job (`sweep --shard I/N`, one store per shard) from several "
      "stores into one run in OUT, with which shard, host and GPU measured each point; other "
      "runs are copied unchanged");
  command->add_flag("--json", options.json, "the merged runs as JSON on stdout");
  command->add_option("out", args->out, "the store to write (created if absent)")->required();
  command->add_option("inputs", args->inputs, "the shards' stores")
      ->required()
      ->check(CLI::ExistingFile);
  command->footer(
      "Examples:\n  timeroof merge all.db shard-0.db shard-1.db shard-2.db shard-3.db\n"
      "  timeroof merge all.db shard-*.db && timeroof report --db all.db\n\n"
      "Shards of one job share the command apart from --shard. Refused, nothing written: a\n"
      "point in two shards, shards with different specs or counts, a shard index twice,\n"
      "shards on different GPU models, OUT among the inputs. A merged run missing points\n"
      "is stored as partial, named on stderr, with exit code 3.");
  when_chosen(*command, action,
              [&options, args] { return run_merge(options, args->out, args->inputs); });
}

ExitCode run_report(const CommonOptions& options, const std::vector<std::string>& runs,
                    const std::vector<std::string>& from, const std::string& format) {
  const plots::ChartFormat chart_format = plots::parse_chart_format(format);  // before any work
  refuse_overwriting(options.out, from.empty() ? std::vector<std::string>{options.db} : from);
  std::vector<RunRecord> records = load_runs(options, runs, from);
  attach_profile_roofs(records, options, from);
  std::vector<std::string> files;
  const std::string index = write_report_of(options, records, chart_format, {}, &files);
  if (options.json) {
    nlohmann::json run_list = nlohmann::json::array();
    for (std::size_t i = 0; i < records.size(); ++i)
      run_list.push_back(
          {{"id", run_number(records[i].run, i + 1)}, {"uuid", records[i].run.uuid}});
    print_json({{"index", index},
                {"markdown", (std::filesystem::path(index).parent_path() / "report.md").string()},
                {"format", plots::to_string(chart_format)},
                {"runs", run_list},
                {"files", files}});
  } else {
    std::cout << index << '\n';
  }
  return ExitCode::ok;
}

void register_report(CLI::App& app, CommonOptions& options, Action& action) {
  struct Arguments {
    std::vector<std::string> runs;
    std::vector<std::string> from;
    std::string format = "svg";
  };
  auto args = std::make_shared<Arguments>();
  CLI::App* command = app.add_subcommand(
      "report",
      "Write the HTML and Markdown report of runs (all, or those named by id or uuid "
      "prefix) from the results store or from export files; no GPU needed");
  add_db(*command, options);
  add_json(*command, options);
  add_run_selection(*command, args->runs, args->from);
  command->add_option("--out", options.out, "output directory (default: ./timeroof-report)");
  command->add_option("--format", args->format,
                      "chart files report.md references: svg (default), png or pdf (converted "
                      "from the SVGs with rsvg-convert, package librsvg2-bin)");
  command->footer(
      "Examples:\n  timeroof report\n  timeroof report 3 --out reports/h200\n"
      "  timeroof report --from samples/sample-run.json.gz --out /tmp/sample-report\n"
      "  timeroof report --format png --out slides\n\n"
      "Writes DIR/index.html (self-contained: inline SVG and CSS, no network, no\n"
      "JavaScript), DIR/report.md and its SVG charts (plus PNG or PDF copies that\n"
      "report.md references, with --format), and prints the path of index.html; with\n"
      "--json {\"index\", \"markdown\", \"format\", \"runs\": [{\"id\", \"uuid\"}], \"files\"}:\n"
      "the path of every file written.");
  when_chosen(*command, action, [&options, args] {
    return run_report(options, args->runs, args->from, args->format);
  });
}

void register_commands(CLI::App& app, CommonOptions& options, Action& action) {
  register_info(app, options, action);
  register_main_job(app, options, action);
  register_ceilings(app, options, action);
  register_sweep(app, options, action);
  register_workers(app, action);
  register_metrics(app, options, action);
  register_list_runs(app, options, action);
  register_export(app, options, action);
  register_import(app, options, action);
  register_merge(app, options, action);
  register_report(app, options, action);
  register_analyze(app, options, action);
  register_compare(app, options, action);
  register_profile(app, options, action);
  register_completion(app, action);
}

}  // namespace timeroof::cli
