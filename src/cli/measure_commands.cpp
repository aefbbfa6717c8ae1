// `timeroof run` and `timeroof ceilings`: the commands that measure a machine's roofs
// (and, for `run`, its default sweeps), on one GPU or on --devices with one worker per
// GPU; without a GPU, `run` shows the bundled sample.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <utility>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/ceiling_names.hpp"
#include "core/format.hpp"
#include "core/json_io.hpp"
#include "core/vocabulary.hpp"
#include "plots/report.hpp"
#include "src/cli/command_options.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/console.hpp"
#include "src/cli/devices.hpp"
#include "src/cli/gpu_backend.hpp"
#include "src/cli/model_run.hpp"
#include "src/cli/stored_runs.hpp"
#include "src/cli/sweep_backend.hpp"
#include "src/store/results_store.hpp"
#include "sweeps/family.hpp"

namespace timeroof::cli {

namespace {

// Where the bundled sample is: $TIMEROOF_SAMPLE, else beside an installed
// binary (PREFIX/bin/timeroof -> PREFIX/share/timeroof/samples, `cmake
// --install` and the .deb), else in the source tree the binary was built from.
std::string sample_path() {
  if (const char* override_path = std::getenv("TIMEROOF_SAMPLE")) return override_path;
  return installed_data("samples/sample-full-run-h200.json.gz", TIMEROOF_SAMPLE_PATH);
}

// The bundled sample: a real run recorded on the device machine.
std::vector<RunRecord> load_sample(std::string& path) {
  path = sample_path();
  return read_export_file(path);
}

// A roof that failed (not one the GPU lacks) makes the run partial.
bool some_roof_failed(const Machine& machine) {
  return std::any_of(machine.skipped.begin(), machine.skipped.end(),
                     [](const CeilingSkip& s) { return s.failed; });
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

    // One worker per GPU for every sweep: each sets up its GPU once, not per sweep.
    std::optional<WorkerPool> workers;
    if (!sweeps.empty()) workers.emplace(own_executable(), devices);
    for (const std::string& family : sweeps) {
      SweepRequest request;
      request.spec = default_spec(family);
      request.devices = devices;
      request.workers = &*workers;
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
  std::vector<std::string> families;
  for (const OperatorFamily& family : operator_families()) families.push_back(family.name);
  if (!options.devices.empty()) return measure_and_store_on_devices(options, ceilings, families);
  return measure_and_store(options, ceilings, families);
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
      "The main job: describe the GPU, measure its roofs, run the default sweep of every "
      "operator family (conv2d, lstm, gemm, attention, layernorm, batchnorm, pointwise, "
      "softmax, pool), store everything as one run, and print the summary");
  add_db(*command, options);
  add_json(*command, options);
  add_device(*command, options);
  add_out(*command, options);
  add_devices(*command, options,
              "GPUs to use at once, all or 0,2,5: the roofs of each GPU (one run per GPU), the "
              "interconnect between them, and the sweeps' points spread over all of them");
  command->footer(
      "Examples:\n  timeroof run\n  timeroof run --device 1 --db results/h200.db\n"
      "  timeroof run --devices all\n"
      "  timeroof run --model resnet50 --batch 1,32 --dry-run\n"
      "  timeroof run --model llama7b_decode --precision bf16\n\n"
      "--model measures a model's distinct layers (each with its count) at each batch into\n"
      "one run, judged against this GPU's roofs from the store (measured first when it has\n"
      "none), and prints the model's time, its Benanza lower bound and headroom, the time\n"
      "share per operator type and the layers that explain most of the gap.\n\n"
      "It ends with the report (index.html, report.md and the charts) written into --out\n"
      "(default ./timeroof-report) and prints the path of index.html as its last line.\n"
      "Without a GPU it says why in one line and shows the bundled sample, a real run\n"
      "recorded on an H200, instead: its summary and its report, marked as the sample;\n"
      "exit code 2 (no GPU: nothing was measured).");
  auto sustained = std::make_shared<std::optional<double>>();
  add_sustained(*command, *sustained);
  // --model: a model layer table instead of the default sweeps (src/cli/model_run.hpp).
  auto model = std::make_shared<ModelRequest>();
  auto precision = std::make_shared<std::string>();
  auto no_counters = std::make_shared<bool>(false);
  CLI::Option* model_option =
      command
          ->add_option("--model", model->model,
                       "measure a model's layers instead: a bundled table (resnet50, "
                       "bert_base_128, bert_base_512, llama7b_prefill, llama7b_decode, "
                       "lstm_paper; sweeps/models) or a table's path (.toml)")
          ->check(non_empty("--model resnet50"));
  const auto with_model = [&](CLI::Option* option) { option->needs(model_option); };
  with_model(command->add_option("--batch", model->batches,
                                 "--model: the batches, a value list (1,8,32 or 1..64:x2); "
                                 "default: the table's"));
  with_model(command->add_option("--precision", *precision,
                                 "--model: the precision of every layer whose family has one "
                                 "(fp16, bf16, fp32, ...)"));
  CLI::Option* dry_run = command->add_flag(
      "--dry-run", model->dry_run, "--model: list the layers, their points and the expected time");
  with_model(dry_run);
  with_model(command->add_option("--resume", model->resume, "--model: continue this run")
                 ->excludes(dry_run)
                 ->check(non_empty("--resume 3")));
  with_model(command->add_flag("--no-counters", *no_counters,
                               "--model: timing and trace only, no counters"));
  model_option->excludes(command->get_option("--devices"))
      ->excludes(command->get_option("--sustained"));
  when_chosen(*command, action, [&options, sustained, model, precision, no_counters] {
    if (!model->model.empty()) {
      model->counters = !*no_counters;
      if (!precision->empty()) model->overrides["precision"] = *precision;
      return run_model(options, *model);
    }
    CeilingOptions ceilings;
    ceilings.sustained_seconds = sustained_seconds(*sustained, false);
    return run_main_job(options, ceilings);
  });
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

}  // namespace timeroof::cli
