#include "src/cli/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
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
#include "core/json_io.hpp"
#include "core/vocabulary.hpp"
#include "plots/report.hpp"
#include "roofline/analysis.hpp"
#include "src/cli/command_options.hpp"
#include "src/cli/console.hpp"
#include "src/cli/devices.hpp"
#include "src/cli/export_csv.hpp"
#include "src/cli/gpu_backend.hpp"
#include "src/cli/merge.hpp"
#include "src/cli/sweep_backend.hpp"
#include "src/store/results_store.hpp"
#include "sweeps/family.hpp"

namespace timeroof::cli {

namespace {

void print_json(const nlohmann::json& value) {
  std::cout << value.dump(2) << '\n';
}

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

// Where the bundled sample is: $TIMEROOF_SAMPLE, else beside an installed
// binary (PREFIX/bin/timeroof -> PREFIX/share/timeroof/samples, `cmake
// --install` and the .deb), else in the source tree the binary was built from.
std::string sample_path() {
  if (const char* override_path = std::getenv("TIMEROOF_SAMPLE")) return override_path;
  std::error_code error;
  const std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed =
        binary.parent_path().parent_path() / "share/timeroof/samples/sample-run.json";
    if (std::filesystem::is_regular_file(installed, error)) return installed.string();
  }
  return TIMEROOF_SAMPLE_PATH;
}

// The bundled sample: a real run recorded on the device machine.
std::vector<RunRecord> load_sample(std::string& path) {
  path = sample_path();
  return read_export_file(path);
}

constexpr const char* kDefaultReportDir = "timeroof-report";

// Writes the report of `records` into --out (default ./timeroof-report) and
// returns the path of its index.html; `written`, when given, receives the path of
// every file written.
std::string write_report_of(const CommonOptions& options, const std::vector<RunRecord>& records,
                            plots::ChartFormat format = plots::ChartFormat::svg,
                            const std::string& notice = {},
                            std::vector<std::string>* written = nullptr) {
  const std::string dir = options.out.empty() ? kDefaultReportDir : options.out;
  const std::vector<std::string> files = plots::write_report(records, dir, format, notice);
  if (written)
    for (const std::string& name : files)
      written->push_back((std::filesystem::path(dir) / name).string());
  return (std::filesystem::path(dir) / "index.html").string();
}

// A sweep measures no roofs of its own: its points are judged against the newest
// roofs of the same GPU (by UUID) in the store, copied into its run with where
// they came from in each method. Without any, its points say there is nothing
// to judge them against (roofline/classify.hpp, rule no_roof), never
// latency-bound against zeros (issue 16).
void adopt_roofs_of_the_same_gpu(ResultsStore& store, Run& run) {
  std::optional<Run> source;
  for (const Run& other : store.list_runs())
    if (other.id != run.id && other.machine.gpu.uuid == run.machine.gpu.uuid &&
        !other.machine.ceilings.empty())
      source = other;
  if (!source) {
    std::cerr << "timeroof: no roofs of this GPU in " << store.path()
              << " yet: the points will have no class; run `timeroof ceilings --db " << store.path()
              << "` to measure them\n";
    return;
  }
  Machine machine = run.machine;
  machine.ceilings = source->machine.ceilings;
  machine.working_set = source->machine.working_set;
  machine.skipped = source->machine.skipped;
  for (Ceiling& c : machine.ceilings)
    c.method = "from run " + std::to_string(source->id) + " (" + source->started_at +
               ", same GPU): " + c.method;
  store.set_machine_measurements(run.id, machine);
  run.machine = std::move(machine);
}

// Ends the run with `status` (failed, partial, complete) and stores that.
void finish_run(ResultsStore& store, Run& run, RunStatus status) {
  run.status = to_string(status);
  run.finished_at = utc_now_iso8601();
  store.update_run(run);
}

// The one failed-run guard: runs `measure`; if it throws, every run of `runs` that
// `measure` did not finish itself is stored as failed (every roof and point
// measured so far stays in the store), and the error goes on.
template <typename Measure>
void failed_on_throw(ResultsStore& store, std::span<Run> runs, Measure&& measure) {
  std::vector<std::string> finished_at;
  for (const Run& run : runs) finished_at.push_back(run.status + " " + run.finished_at);
  try {
    std::forward<Measure>(measure)();
  } catch (...) {
    for (std::size_t i = 0; i < runs.size(); ++i)
      if (runs[i].status + " " + runs[i].finished_at == finished_at[i])
        finish_run(store, runs[i], RunStatus::failed);
    throw;
  }
}

// A roof that failed (not one the GPU lacks) makes the run partial.
bool some_roof_failed(const Machine& machine) {
  return std::any_of(machine.skipped.begin(), machine.skipped.end(),
                     [](const CeilingSkip& s) { return s.failed; });
}

// The stored runs, as JSON or as text with where they are stored.
void print_records(const CommonOptions& options, const std::vector<RunRecord>& records) {
  for (const RunRecord& record : records) {
    if (options.json) {
      print_json(record);
    } else {
      std::cout << format_run(record, 1);
      std::cout << "stored as run " << record.run.id << " in " << options.db << "\n";
    }
  }
}

// The main job ends with its report: the path of index.html is the last line
// (on stderr with --json, which keeps stdout one JSON document per run).
void write_main_job_report(const CommonOptions& options, const std::vector<RunRecord>& records) {
  const std::string index = write_report_of(options, records);
  if (options.json)
    std::cerr << "timeroof: report: " << index << '\n';
  else
    std::cout << index << '\n';
}

// How the roofs were asked for, kept in the run's spec.
nlohmann::json ceilings_spec(const CeilingOptions& ceilings) {
  return {{"quick", ceilings.quick},
          {"only", ceilings.only},
          {"sustained_seconds", ceilings.sustained_seconds}};
}

// Describes the GPU, opens the store, records the run, measures the roofs and
// stores them. The GPU is described first, so a bad --device writes nothing;
// the run row exists before measuring, so a crash leaves a visible "running" run.
ExitCode measure_and_store(const CommonOptions& options, const CeilingOptions& ceilings,
                           const std::vector<std::string>& sweeps = {}) {
  Run run = new_run(options.command_line);
  run.machine.gpu = describe_gpu(options.device);  // counters probed after the roofs
  run.spec = {{"ceilings", ceilings_spec(ceilings)}};
  ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_write);
  store.begin_run(run);
  failed_on_throw(store, {&run, 1}, [&] { measure_machine(run.machine, ceilings); });
  store.update_run(run);  // the chip and the counter probe, known now
  store.set_machine_measurements(run.id, run.machine);
  bool partial = some_roof_failed(run.machine);
  failed_on_throw(store, {&run, 1}, [&] {
    for (const std::string& family : sweeps) {
      SweepRequest request;
      request.spec = default_spec(family);
      partial =
          measure_sweep(request, store, run, isatty(STDERR_FILENO)) == ExitCode::partial || partial;
    }
  });
  finish_run(store, run, partial ? RunStatus::partial : RunStatus::complete);
  const std::vector<RunRecord> records = {store.load_run(run.id)};
  print_records(options, records);
  if (!sweeps.empty()) write_main_job_report(options, records);
  return partial ? ExitCode::partial : ExitCode::ok;
}

// --devices: each GPU identified (no context: the workers own the GPUs); `same_model`:
// the GPUs of one sweep must be one model, since its points are judged against
// one GPU's roofs.
std::vector<GpuInfo> identify_devices(const std::vector<int>& devices, bool same_model) {
  std::vector<GpuInfo> gpus;
  for (int d : devices) gpus.push_back(identify_gpu(d));
  for (const GpuInfo& gpu : gpus)
    if (same_model && gpu.name != gpus.front().name)
      throw usage_error("--devices: GPU " + std::to_string(gpu.index) + " is a " + gpu.name +
                        ", GPU " + std::to_string(gpus.front().index) + " a " + gpus.front().name +
                        "; one sweep is judged against one model's roofs: name GPUs of one model");
  return gpus;
}

nlohmann::json devices_json(const std::vector<GpuInfo>& gpus) {
  nlohmann::json list = nlohmann::json::array();
  for (const GpuInfo& gpu : gpus)
    list.push_back({{"index", gpu.index},
                    {"name", gpu.name},
                    {"uuid", gpu.uuid},
                    {"pci_bus_id", gpu.pci_bus_id}});
  return list;
}

// A lock file the ceilings workers take turns with (CeilingRequest::host_lock),
// removed with this object.
class HostLockFile {
 public:
  HostLockFile() {
    char path[] = "/tmp/timeroof-host-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) throw environment_error("cannot create a lock file in /tmp for the GPU workers");
    close(fd);
    path_ = path;
  }
  ~HostLockFile() { std::remove(path_.c_str()); }
  HostLockFile(const HostLockFile&) = delete;
  HostLockFile& operator=(const HostLockFile&) = delete;
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// `run` and `ceilings` with --devices: one run per GPU, each holding that GPU's
// roofs, measured at once by one worker per GPU (host-side roofs taking turns);
// the first run also holds the node's interconnect roofs and the sweeps, whose
// points are spread over every GPU.
ExitCode measure_and_store_on_devices(const CommonOptions& options, const CeilingOptions& ceilings,
                                      const std::vector<std::string>& sweeps) {
  const std::vector<int> devices = parse_devices(options.devices, find_gpus().count, true);
  const std::vector<GpuInfo> gpus = identify_devices(devices, !sweeps.empty());
  ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_write);
  std::vector<Run> runs;
  for (const GpuInfo& gpu : gpus) {
    Run run = new_run(options.command_line);
    run.machine.gpu = gpu;
    run.spec = {{"ceilings", ceilings_spec(ceilings)}, {"devices", devices_json(gpus)}};
    store.begin_run(run);
    runs.push_back(std::move(run));
  }
  bool partial = false;
  failed_on_throw(store, runs, [&] {
    const HostLockFile host_lock;
    std::vector<nlohmann::json> jobs(devices.size(),
                                     {{"kind", "ceilings"},
                                      {"quick", ceilings.quick},
                                      {"only", ceilings.only},
                                      {"sustained_seconds", ceilings.sustained_seconds},
                                      {"host_lock", host_lock.path()}});
    if (isatty(STDERR_FILENO))
      std::fprintf(stderr, "timeroof: measuring the roofs of %zu GPUs at once\n", devices.size());
    const std::vector<int> codes = run_workers(
        own_executable(), devices, jobs,
        [&](int w, const nlohmann::json& line) {
          if (!line.contains("machine")) return;
          Run& run = runs[static_cast<std::size_t>(w)];
          run.machine = line["machine"].get<Machine>();
          store.update_run(run);  // the chip and the counter probe, known now
          store.set_machine_measurements(run.id, run.machine);
        },
        nullptr);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (codes[i] == 0) continue;
      std::fprintf(stderr, "timeroof: GPU %d's roofs: the worker ended with exit code %d\n",
                   devices[i], codes[i]);
      finish_run(store, runs[i], RunStatus::failed);
      partial = true;
    }
    for (const Run& run : runs) partial = partial || some_roof_failed(run.machine);

    std::vector<int> distinct = devices;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    const bool wanted =
        ceilings.only.empty() ||
        std::any_of(ceilings.only.begin(), ceilings.only.end(),
                    [](const std::string& n) { return ceiling::is_interconnect(n); });
    if (distinct.size() >= 2 && wanted) {
      if (isatty(STDERR_FILENO))
        std::fprintf(stderr, "timeroof: measuring the interconnect between GPUs %s\n",
                     options.devices.c_str());
      const nlohmann::json job = {
          {"kind", "interconnect"}, {"devices", distinct}, {"quick", ceilings.quick}};
      Machine interconnect;
      const std::vector<int> interconnect_codes = run_workers(
          own_executable(), {distinct.front()}, {job},
          [&](int, const nlohmann::json& line) {
            if (line.contains("machine")) interconnect = line["machine"].get<Machine>();
          },
          nullptr);
      if (interconnect_codes[0] != 0) {
        std::fprintf(stderr, "timeroof: interconnect roofs: the worker ended with exit code %d\n",
                     interconnect_codes[0]);
        partial = true;
      }
      Machine& node = runs.front().machine;
      node.ceilings.insert(node.ceilings.end(), interconnect.ceilings.begin(),
                           interconnect.ceilings.end());
      node.skipped.insert(node.skipped.end(), interconnect.skipped.begin(),
                          interconnect.skipped.end());
      store.set_machine_measurements(runs.front().id, node);
    }

    for (const std::string& family : sweeps) {
      SweepRequest request;
      request.spec = default_spec(family);
      request.devices = devices;
      partial =
          measure_sweep(request, store, runs.front(), isatty(STDERR_FILENO)) == ExitCode::partial ||
          partial;
    }
  });
  std::vector<RunRecord> records;
  for (Run& run : runs) {
    if (run.status == to_string(RunStatus::running))
      finish_run(store, run, partial ? RunStatus::partial : RunStatus::complete);
    records.push_back(store.load_run(run.id));
  }
  print_records(options, records);
  if (!sweeps.empty()) write_main_job_report(options, records);
  return partial ? ExitCode::partial : ExitCode::ok;
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
  const nlohmann::json document =
      parse_untrusted_json(file, path, "pass a file written by `timeroof export`");
  return parse_export_document(document, path);
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

ExitCode run_main_job(const CommonOptions& options, const CeilingOptions& ceilings) {
  const GpuAvailability gpus = find_gpus();
  if (gpus.count == 0) {
    std::string path;
    const std::vector<RunRecord> sample = load_sample(path);
    const std::string notice = sample.empty() ? "" : plots::sample_notice(sample.front());
    std::fprintf(stderr, "timeroof: no GPU here (%s); showing the bundled sample, %s: %s\n",
                 gpus.why_none.c_str(), path.c_str(), notice.empty() ? "empty" : notice.c_str());
    if (options.json) {
      print_json(export_document(sample));
    } else {
      for (std::size_t i = 0; i < sample.size(); ++i) std::cout << format_run(sample[i], i + 1);
      std::cout << write_report_of(options, sample, plots::ChartFormat::svg, notice) << '\n';
    }
    // Nothing was measured: an environment problem (no GPU), as the README says.
    return ExitCode::environment;
  }

  // The main job: the roofs, then the default sweeps of every operator family.
  if (!options.devices.empty())
    return measure_and_store_on_devices(options, ceilings, {"conv2d", "lstm"});
  return measure_and_store(options, ceilings, {"conv2d", "lstm"});
}

// --sustained, on `ceilings` and `run`.
void add_sustained(CLI::App& command, std::optional<double>& seconds) {
  command
      .add_option("--sustained", seconds,
                  "seconds of load after each tensor and HBM roof, for the rate it holds "
                  "(default 10, 0 with --quick; 0: none)")
      ->check(CLI::Range(0.0, 600.0));
}

double sustained_seconds(const std::optional<double>& given, bool quick) {
  return given.value_or(quick ? 0.0 : kDefaultSustainedSeconds);
}

void register_main_job(CLI::App& app, CommonOptions& options, Action& action) {
  CLI::App* command = app.add_subcommand(
      "run",
      "The main job: describe the GPU, measure its roofs, run the default conv2d and lstm "
      "sweeps, store everything as one run, and print the summary");
  add_db(*command, options);
  add_json(*command, options);
  add_device(*command, options);
  add_out(*command, options);
  add_devices(*command, options,
              "GPUs to use at once, all or 0,2,5: the roofs of each GPU (one run per GPU), the "
              "interconnect between them, and the sweeps' points spread over all of them");
  command->footer(
      "Examples:\n  timeroof run\n  timeroof run --device 1 --db results/h200.db\n"
      "  timeroof run --devices all\n\n"
      "It ends with the report (index.html, report.md and the charts) written into --out\n"
      "(default ./timeroof-report) and prints the path of index.html as its last line.\n"
      "Without a GPU it says why in one line and shows the bundled sample, a real run\n"
      "recorded on an H200, instead: its summary and its report, marked as the sample;\n"
      "exit code 2 (no GPU: nothing was measured).");
  auto sustained = std::make_shared<std::optional<double>>();
  add_sustained(*command, *sustained);
  when_chosen(*command, action, [&options, sustained] {
    CeilingOptions ceilings;
    ceilings.sustained_seconds = sustained_seconds(*sustained, false);
    return run_main_job(options, ceilings);
  });
}

namespace {

// --metrics: each name checked against CUPTI's list for `chip` (empty: every chip
// this CUPTI knows), offline, so a typo is refused before any GPU work.
void check_extra_metrics(const SweepSpec& spec, const std::string& chip) {
  if (spec.metrics.empty()) return;
  const std::vector<std::string> unknown = unknown_metric_names(chip, spec.metrics);
  if (unknown.empty()) {
    // Listed but not collectable by the range profiler: build_config names it.
    if (!chip.empty() && !supported_chips().empty()) (void)count_passes(chip, spec.metrics);
    return;
  }
  throw usage_error(
      "--metrics: '" + unknown.front() + "' is no CUPTI metric " +
      (chip.empty() ? std::string("of any chip this CUPTI knows") : "of chip " + chip) +
      "; list the names with `timeroof metrics" +
      (chip.empty() ? std::string() : " --chip " + chip) + " --filter TEXT`");
}

// The dry run's counter passes with and without --metrics, per precision and
// math of the spec's points, on `chip` (the store's newest run's), offline.
nlohmann::json extra_metrics_plan(const SweepSpec& spec, const std::string& chip) {
  nlohmann::json plan = {{"names", spec.metrics}, {"chip", chip}};
  if (chip.empty()) {
    plan["why_no_passes"] =
        "no chip known (no run in the store); count them with `timeroof metrics --chip CHIP "
        "--passes NAME,...`";
    return plan;
  }
  const OperatorFamily& family = find_family(spec.family);
  std::set<std::pair<Precision, MathMode>> kinds;
  for (const nlohmann::json& point : spec.points) {
    const std::unique_ptr<Problem> problem = family.problem(point);
    kinds.insert({problem->precision(), problem->math_mode()});
  }
  nlohmann::json passes = nlohmann::json::array();
  for (const auto& [precision, math] : kinds)
    passes.push_back({{"precision", to_string(precision)},
                      {"math", to_string(math)},
                      {"catalog", plan_passes(chip, precision, math, {})},
                      {"with_metrics", plan_passes(chip, precision, math, spec.metrics)}});
  plan["passes"] = std::move(passes);
  return plan;
}

std::string extra_metrics_text(const nlohmann::json& plan) {
  std::string text;
  if (plan.contains("why_no_passes"))
    return "counter passes with --metrics: not counted, " +
           plan.at("why_no_passes").get<std::string>() + "\n";
  for (const nlohmann::json& p : plan.at("passes"))
    text += (text.empty() ? "" : ", ") + p.at("precision").get<std::string>() + "/" +
            p.at("math").get<std::string>() + " " + std::to_string(p.at("catalog").get<int>()) +
            " -> " + std::to_string(p.at("with_metrics").get<int>());
  return "counter passes on " + plan.at("chip").get<std::string>() +
         " (the catalog's -> with --metrics): " + text + "\n";
}

}  // namespace

ExitCode run_sweep(const CommonOptions& given, const SweepRequest& given_request,
                   const std::string& resume, const SweepShard& sharding) {
  CommonOptions options = given;
  SweepRequest request = given_request;
  if (sharding.shard) request.only_seqs = shard_point_seqs(request.spec, *sharding.shard);
  if (!request.spec.metrics.empty() && !request.counters)
    throw usage_error("--metrics needs the hardware counters; drop --no-counters");
  check_extra_metrics(request.spec, "");  // no chip known yet: one that has each name
  if (request.dry_run) {
    if (sharding.shard && !options.json)
      std::cout << "shard " << to_string(*sharding.shard) << " (" << sharding.source
                << "): " << request.only_seqs->size()
                << " point(s), split longest-expected-first by the default time model\n";
    // The time estimate uses the roofs of the newest run in the store, if any.
    std::optional<Machine> measured;
    std::error_code error;  // exists, not opened: opening a FIFO would block
    std::string chip;       // --metrics' passes: the newest run's chip
    if (std::filesystem::exists(options.db, error)) {
      ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_only);
      for (const Run& run : store.list_runs()) {
        if (!run.machine.ceilings.empty()) measured = run.machine;
        if (!run.machine.gpu.chip.empty()) chip = run.machine.gpu.chip;
      }
    }
    std::optional<nlohmann::json> extra;
    if (!request.spec.metrics.empty()) {
      check_extra_metrics(request.spec, chip);
      extra = extra_metrics_plan(request.spec, chip);
      for (const nlohmann::json& p : extra->value("passes", nlohmann::json::array()))
        request.extra_counter_passes =
            std::max(request.extra_counter_passes,
                     p.at("with_metrics").get<int>() - p.at("catalog").get<int>());
    }
    if (options.json) {
      nlohmann::json plan = describe_sweep_json(request, measured ? &*measured : nullptr);
      if (sharding.shard)
        plan["shard"] = {{"shard", to_string(*sharding.shard)}, {"source", sharding.source}};
      if (extra) plan["extra_metrics"] = *extra;
      print_json(plan);
    } else {
      std::cout << describe_sweep(request, measured ? &*measured : nullptr);
      if (extra) std::cout << extra_metrics_text(*extra);
    }
    return ExitCode::ok;
  }
  const GpuAvailability gpus_here = find_gpus();
  if (gpus_here.count == 0) throw environment_error("no GPU: " + gpus_here.why_none);
  if (sharding.local_rank)  // --shard-from-mpi without --device: one GPU per local rank
    options.device = device_for_local_rank(*sharding.local_rank, gpus_here.count);
  std::vector<GpuInfo> gpus;  // --devices
  if (!options.devices.empty()) {
    request.devices = parse_devices(options.devices, gpus_here.count, request.counters);
    gpus = identify_devices(request.devices, true);
  }
  const int device = request.devices.empty() ? options.device : request.devices.front();
  ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_write);
  Run run;
  if (resume.empty()) {
    run = new_run(options.command_line);
    // --devices: the first worker sends its inspected GPU (chip, counters) later.
    run.machine.gpu = gpus.empty() ? inspect_gpu(device) : gpus.front();
    check_extra_metrics(request.spec, run.machine.gpu.chip);  // before the run is stored
    if (!gpus.empty()) run.spec["devices"] = devices_json(gpus);
    if (sharding.shard) run.spec["shard"] = to_json(*sharding.shard);  // `merge` finds it
    store.begin_run(run);
    adopt_roofs_of_the_same_gpu(store, run);
  } else {
    std::optional<RunRecord> record = store.load_run(resume);
    if (!record) {
      throw usage_error("--resume " + resume + ": no such run in " + options.db +
                        "; list the runs with `timeroof runs`");
    }
    run = record->run;
    if (run.status == to_string(RunStatus::complete))
      throw usage_error("--resume " + resume + ": run " + std::to_string(run.id) +
                        " is complete; nothing to resume (start a new run without --resume)");
    const GpuInfo here = gpus.empty() ? inspect_gpu(device) : gpus.front();
    check_extra_metrics(request.spec, here.chip);
    if (here.uuid != run.machine.gpu.uuid) {
      throw usage_error("--resume " + resume + ": that run measured " + run.machine.gpu.name + " " +
                        run.machine.gpu.uuid + ", this is " + here.uuid +
                        (request.devices.empty() ? "; resume on the same GPU (--device)"
                                                 : "; resume with that GPU first in --devices"));
    }
    // A shard run resumes its own share: the stored shard, which --shard may repeat.
    const std::optional<Shard> stored = shard_of(run.spec);
    if (sharding.shard && stored != sharding.shard)
      throw usage_error("--resume " + resume + ": run " + std::to_string(run.id) + " is " +
                        (stored ? "shard " + to_string(*stored) : std::string("no shard")) +
                        ", not " + to_string(*sharding.shard) +
                        "; resume it with the command that started it: " + run.command_line);
    if (stored && !sharding.shard) request.only_seqs = shard_point_seqs(request.spec, *stored);
    // Last, so a resume refused above leaves the run as it was; refused at once
    // while another process writes it (its first writer, or another resume).
    store.claim_run(run);
  }
  if (const std::optional<Shard> shard = shard_of(run.spec))
    std::cerr << "timeroof: shard " << to_string(*shard) << " ("
              << (sharding.source.empty() ? "stored" : sharding.source)
              << "): " << request.only_seqs->size() << " point(s) on GPU " << options.device
              << " into " << options.db << "\n";
  ExitCode code = ExitCode::ok;
  failed_on_throw(store, {&run, 1},
                  [&] { code = measure_sweep(request, store, run, isatty(STDERR_FILENO)); });
  finish_run(store, run, code == ExitCode::partial ? RunStatus::partial : RunStatus::complete);
  print_records(options, {store.load_run(run.id)});
  return code;
}

ExitCode run_ceilings(const CommonOptions& options, const CeilingOptions& ceilings) {
  const std::vector<std::string>& only = ceilings.only;
  if (!built_with_cuda()) throw environment_error(find_gpus().why_none);
  const std::vector<std::string> known = known_ceiling_names();
  for (const std::string& name : only) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ",") + k;
      throw usage_error("--only: unknown roof '" + name + "' (known: " + list + ")");
    }
  }
  const GpuAvailability gpus = find_gpus();
  if (gpus.count == 0) throw environment_error("no GPU: " + gpus.why_none);
  if (!options.devices.empty()) return measure_and_store_on_devices(options, ceilings, {});
  return measure_and_store(options, ceilings);
}

void register_ceilings(CLI::App& app, CommonOptions& options, Action& action) {
  struct Arguments {
    bool quick = false;
    std::vector<std::string> only;
    std::optional<double> sustained_seconds;
  };
  auto args = std::make_shared<Arguments>();
  CLI::App* command = app.add_subcommand(
      "ceilings",
      "Measure the GPU's roofs with timeroof's own kernels (CUDA-core and Tensor-Core "
      "FLOP/s, HBM/L2/L1/shared bandwidth, transfers, launch cost) and the cuBLASLt "
      "reference, store them as a run, and print measured vs theoretical");
  add_db(*command, options);
  add_json(*command, options);
  add_device(*command, options);
  add_devices(*command, options,
              "GPUs to measure at once, all or 0,2,5: one run per GPU, plus the interconnect "
              "roofs between them (P2P copies and latency, NCCL all-reduce)");
  command->add_flag("--quick", args->quick, "reduced sizes and repeats (under 20 s)");
  command->add_option("--only", args->only, "roofs to measure, e.g. --only hbm_copy,fp32_fma")
      ->delimiter(',');
  add_sustained(*command, args->sustained_seconds);
  command->footer(
      "Examples:\n  timeroof ceilings\n  timeroof ceilings --quick\n"
      "  timeroof ceilings --only hbm_copy,l2_read,tensor_bf16 --json\n"
      "  timeroof ceilings --devices all --quick\n\n"
      "Theoretical = CUPTI .peak_sustained x the clock observed during each measurement.\n"
      "Exit code 3 when a roof failed (the others are kept).");
  when_chosen(*command, action, [&options, args] {
    CeilingOptions ceilings;
    ceilings.quick = args->quick;
    ceilings.only = args->only;
    ceilings.sustained_seconds = sustained_seconds(args->sustained_seconds, args->quick);
    return run_ceilings(options, ceilings);
  });
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
                     const std::vector<std::string>& passes_for) {
  if (!built_with_cuda()) throw environment_error(find_gpus().why_none);
  if (chip.empty()) {
    const GpuAvailability gpus = find_gpus();
    if (gpus.count == 0) {
      std::string chips;
      for (const std::string& c : supported_chips()) chips += (chips.empty() ? "" : ", ") + c;
      throw usage_error("no GPU here to take the chip from; pass --chip NAME (" + chips + ")");
    }
    chip = inspect_gpu(options.device).chip;
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
  command
      ->add_option("--passes", args->passes_for, "count passes for these metrics (comma-separated)")
      ->delimiter(',');
  command->footer(
      "Examples:\n  timeroof metrics --chip GH100 --filter dram__bytes\n"
      "  timeroof metrics --chip GA100 --passes dram__bytes_read.sum,lts__t_bytes.sum\n"
      "  timeroof metrics --filter tensor_op_hgmma --json");
  when_chosen(*command, action, [&options, args] {
    return run_metrics(options, args->chip, args->filter, args->passes_for);
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

ExitCode run_export(const CommonOptions& options, const std::vector<std::string>& runs,
                    const std::string& requested_format) {
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
    write_output(options.out, export_document(records).dump(2) + "\n", {options.db});
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
  };
  auto args = std::make_shared<Arguments>();
  CLI::App* command = app.add_subcommand(
      "export",
      "Write runs (all, or those named by id or uuid prefix) as a versioned JSON "
      "document, or as tidy CSV tables, for pandas and friends");
  add_db(*command, options);
  add_json(*command, options);
  command->add_option("--out", options.out,
                      "json: a file (default stdout); csv: a directory (required)");
  command->add_option("--format", args->format, "json (default) or csv")
      ->check(CLI::IsMember({"json", "csv"}));
  command->add_option("runs", args->runs, "run ids or uuid prefixes (default: all)");
  command->footer(
      "Examples:\n  timeroof export > all.json\n  timeroof export 3 --out run3.json\n"
      "  timeroof export 1f0c --db other.db\n  timeroof export --format csv --out tables\n\n"
      "JSON: every measurement of the runs, {\"format\": \"timeroof-results\",\n"
      "\"schema_version\", \"runs\"}; its schema is docs/schemas/export.schema.json.\n"
      "CSV: tidy tables written into DIR, their paths printed: points.csv (one row per\n"
      "point: run, GPU, params, times, work, bytes per level, intensities, rates, the\n"
      "model's bounds and class), kernels.csv (one row per kernel), kernel_counters.csv\n"
      "(one row per kernel and counter) and ceilings.csv (one row per roof). Units are in\n"
      "the column names (_s, _bytes, _flop_per_s, ...), integers are written as integers,\n"
      "a value not measured is an empty cell.");
  when_chosen(*command, action,
              [&options, args] { return run_export(options, args->runs, args->format); });
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
      "import", "Add runs from JSON files written by `timeroof export` to the results store");
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
  const std::vector<RunRecord> records = load_runs(options, runs, from);
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
      "  timeroof report --from samples/sample-run.json --out /tmp/sample-report\n"
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

namespace timeroof::cli {

std::vector<std::pair<std::string, std::string>> flag_pairs(const std::vector<std::string>& args) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg.size() < 3) {
      throw usage_error("unexpected argument '" + arg +
                        "'; sweep axes are given as --name values, e.g. --batch 1..64:x2");
    }
    const std::size_t equals = arg.find('=');
    if (equals != std::string::npos) {
      pairs.emplace_back(arg.substr(2, equals - 2), arg.substr(equals + 1));
    } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      pairs.emplace_back(arg.substr(2), args[++i]);
    } else {
      throw usage_error(arg + " needs a value, e.g. " + arg + " 1,2,4");
    }
  }
  return pairs;
}

}  // namespace timeroof::cli
