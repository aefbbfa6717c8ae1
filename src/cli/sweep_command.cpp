// `timeroof sweep`: a sweep file (`sweep FILE.toml`), or one subcommand per
// operator family of the registry (`sweep conv2d`, `sweep lstm`, ...) whose
// options are the family's axes, so `timeroof sweep conv2d --help` lists every
// axis with its allowed values and its default. The command-line options of
// `sweep` (--dry-run, --db, --shard, ...) are bound on `sweep` and on each
// family's subcommand alike, so they may come before or after the family name.
// The flags are read into the sweep's spec here, once, and run_sweep lists it
// (--dry-run) or stores the run and measures it.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/vocabulary.hpp"
#include "src/cli/command_options.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/devices.hpp"
#include "src/cli/gpu_backend.hpp"
#include "src/cli/stored_runs.hpp"
#include "src/cli/sweep_backend.hpp"
#include "src/store/results_store.hpp"
#include "sweeps/family.hpp"
#include "sweeps/spec.hpp"

namespace timeroof::cli {

namespace {

// What `sweep` and `sweep <family>` parse into.
struct SweepArguments {
  SweepRequest request;
  std::string target;  // a sweep file (.toml)
  std::string resume;
  bool no_counters = false;
  std::string shard;
  bool shard_from_mpi = false;
  // The family chosen and its subcommand; that command's axis and option flags by
  // their Option, as typed.
  const OperatorFamily* family = nullptr;
  const CLI::App* family_command = nullptr;
  std::map<const CLI::App*, const OperatorFamily*> families;  // by subcommand
  std::map<const CLI::Option*, std::string> keys;
};

void add_sweep_options(CLI::App& command, CommonOptions& options, SweepArguments& args) {
  add_db(command, options);
  add_json(command, options);
  add_device(command, options);
  add_devices(command, options,
              "GPUs to measure on at once, all or 0,2,5: one worker process per GPU, the points "
              "split by longest expected time first, all stored in one run");
  CLI::Option* dry_run =
      command.add_flag("--dry-run", args.request.dry_run, "list the points and a time estimate");
  command.add_option("--resume", args.resume, "continue this run (id or uuid prefix)")
      ->excludes(dry_run)  // a dry run measures nothing, so resumes nothing
      ->check(non_empty("--resume 3"));
  command
      .add_option("--chip", args.request.chip,
                  "--dry-run with --metrics: the CUPTI chip (e.g. GH100) whose counter plan "
                  "counts the replay passes they add, offline; default: the store's newest "
                  "run's chip")
      ->needs(dry_run)
      ->check(non_empty("--chip GH100"));
  command.add_flag("--no-counters", args.no_counters,
                   "timing and trace only, no hardware counters");
  CLI::Option* shard = command.add_option(
      "--shard", args.shard,
      "measure only share I of N (I = 0..N-1), the same split on every machine; join the "
      "shards' stores with `timeroof merge`");
  shard->check(non_empty("--shard 0/4"));
  command
      .add_flag("--shard-from-mpi", args.shard_from_mpi,
                "--shard from the MPI/Slurm rank and size in the environment; the local rank "
                "picks the GPU unless --device is given")
      ->excludes(shard);
  command.allow_extras();  // a sweep file's flags and unknown flags: refused with the reason
}

std::string value_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// "batch size N; integers; default 16 (the default sweep: 16, 1, 2, ...)".
std::string axis_help(const ParamAxis& axis) {
  std::string text = axis.help + "; ";
  if (axis.kind == ParamAxis::Kind::text)
    text += "values: " + join_list(axis.allowed);
  else
    text += "integers" + (axis.allowed.empty() ? "" : " or " + join_list(axis.allowed));
  text += "; default: " + value_text(axis.defaults.at(0));
  if (axis.defaults.size() > 1) {
    std::vector<std::string> visited;
    for (const nlohmann::json& value : axis.defaults) visited.push_back(value_text(value));
    text += " (the default sweep: " + join_list(visited) + ")";
  }
  return text;
}

// One flag of a family's subcommand: "--hidden-size" shown, "--hidden_size" accepted
// too (sweeps/spec.hpp: dashes and underscores are the same). A flag without a
// value is refused later with the spec's own words, not CLI11's.
void add_flag_option(CLI::App& command, SweepArguments& args, const std::string& key,
                     const std::string& help, const std::string& group) {
  std::string dashed = key;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  const std::vector<std::string> names =
      dashed == key ? std::vector<std::string>{key} : std::vector<std::string>{dashed, key};
  for (const std::string& name : names) {
    CLI::Option* option = command.add_option("--" + name)
                              ->type_name("LIST")
                              ->expected(0, 1)
                              ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    option->description(name == dashed ? help : "");
    option->group(name == dashed ? group : "");
    args.keys[option] = name;
  }
}

void add_family(CLI::App& sweep, CommonOptions& options, SweepArguments& args,
                const OperatorFamily& family) {
  CLI::App* command = sweep.add_subcommand(family.name, family.help);
  args.families[command] = &family;
  add_sweep_options(*command, options, args);
  for (const ParamAxis& axis : family.axes)
    add_flag_option(*command, args, axis.key, axis_help(axis), "Axes");
  const std::pair<const char*, std::string> sweep_options[] = {
      {"transfer", std::string("host<->device copies timed with each call: ") +
                       to_string(TransferMode::none) + " (default), " +
                       to_string(TransferMode::h2d_input) + ", " +
                       to_string(TransferMode::h2d_input_d2h_output)},
      {"host", std::string("host memory of the copies: ") + to_string(HostMemory::pinned) +
                   " (default), " + to_string(HostMemory::pageable)},
      {"l2", "L2 before each timed call: warm (default), cold (flushed)"},
      {"name", "the sweep's name in the store (default: " + family.name + ")"},
      {"metrics",
       "raw CUPTI metrics to collect and store per kernel beside the catalog's, e.g. "
       "dram__bytes_read.sum, sm__cycles_elapsed.avg (names: "
       "`timeroof metrics --filter TEXT`)"}};
  for (const auto& [key, help] : sweep_options)
    add_flag_option(*command, args, key, help, "Sweep options");
  command->footer(
      "Axis flags take lists and ranges: " + std::string(kValueListSyntax) +
      ".\nAxes left out stay at their default; with no axis flag the default sweep runs.\n\n"
      "Examples:\n  timeroof sweep " +
      family.name + " --dry-run\n  timeroof sweep " + family.name + " --" +
      family.axes.front().key + " 1..64:x2 --dry-run");
}

// The axis and option flags of the family's subcommand as (key, value list) pairs,
// in the order given and spelled as typed (sweeps/spec.hpp reads them; the spec
// records them).
std::vector<std::pair<std::string, std::string>> flags_of(const SweepArguments& args) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::map<const CLI::Option*, std::size_t> used;
  for (const CLI::Option* option : args.family_command->parse_order()) {
    const auto key = args.keys.find(option);
    if (key == args.keys.end()) continue;
    const std::size_t n = used[option]++;
    if (n >= option->results().size() || option->results()[n].empty())  // CLI11: "" for none
      throw usage_error("--" + key->second + " needs a value, e.g. --" + key->second + " 1,2,4");
    pairs.emplace_back(key->second, option->results()[n]);
  }
  return pairs;
}

// "--batch 1..64:x2 --precision=fp16" -> {{"batch", "1..64:x2"}, {"precision", "fp16"}};
// anything else is a usage error naming it.
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

// The sweep a command line names, read and validated once (usage errors, no GPU
// work): a sweep file (`target` ending in .toml; no axis flags, --metrics adds to
// its [sweep] metrics), else the family's axis and option flags, or its default
// sweep without any.
SweepSpec spec_of(const OperatorFamily* family, const std::string& target,
                  const std::vector<std::pair<std::string, std::string>>& flags) {
  const bool file = target.size() > 5 && target.compare(target.size() - 5, 5, ".toml") == 0;
  if (!family && !file) family = &find_family(target);
  if (family) return flags.empty() ? default_spec(*family) : spec_from_flags(*family, flags);
  std::vector<std::string> metrics;
  for (const auto& [key, value] : flags) {
    if (key == "metrics" || key == "--metrics") {
      metrics.push_back(value);
      continue;
    }
    throw usage_error("a sweep file takes no axis flags (got --" + key + "); put them in " +
                      target);
  }
  SweepSpec spec = spec_from_toml(target);
  for (const std::string& list : metrics) add_metrics(spec, list, "--metrics");
  return spec;
}

ExitCode run_sweep_command(const CommonOptions& options, SweepArguments& args,
                           const CLI::App& sweep) {
  SweepRequest request = args.request;
  std::vector<std::pair<std::string, std::string>> flags;
  std::vector<std::string> extras = sweep.remaining();
  if (args.family) {
    if (!args.target.empty()) extras.insert(extras.begin(), args.family->name);
    const std::vector<std::string> more = args.family_command->remaining();
    extras.insert(extras.end(), more.begin(), more.end());
    // Flags not of the family: refused in the spec's words (flag_pairs, spec_from_flags).
    if (!extras.empty()) {
      (void)spec_from_flags(*args.family, flag_pairs(extras));
      throw usage_error("unexpected argument '" + extras.front() + "'; see `timeroof sweep " +
                        args.family->name + " --help`");
    }
    flags = flags_of(args);
  } else {
    flags = flag_pairs(extras);
  }
  request.counters = !args.no_counters;
  request.resume = !args.resume.empty();
  SweepShard sharding;
  if (!args.shard.empty()) {
    sharding.shard = parse_shard(args.shard);
    sharding.source = "--shard";
  } else if (args.shard_from_mpi) {
    const MpiPlacement placement =
        placement_from_environment([](const char* name) { return std::getenv(name); });
    sharding.shard = placement.shard;
    sharding.source = placement.source;
    const CLI::App& given = args.family_command ? *args.family_command : sweep;
    if (given.get_option("--device")->count() == 0 && sweep.get_option("--device")->count() == 0)
      sharding.local_rank = placement.local_rank;
  }
  CommonOptions expanded = options;
  expanded.db = expand_db_path(options.db, sharding.shard);  // "%r": each shard its own store
  // The one reading of the value lists.
  request.spec = spec_of(args.family, args.target, flags);
  return run_sweep(expanded, request, args.resume, sharding);
}

}  // namespace

namespace {

// --chip: a chip this CUPTI knows (the list it gives), or a usage error naming them;
// a build without CUPTI says so.
void check_chip(const std::string& chip) {
  const std::vector<std::string> chips = supported_chips();
  if (chips.empty())
    throw environment_error("--chip " + chip +
                            ": this build has no CUPTI to count passes with; use a CUDA build");
  if (std::find(chips.begin(), chips.end(), chip) == chips.end())
    throw usage_error("--chip " + chip + ": no chip of that name in this CUPTI (" +
                      join_list(chips) + "); `timeroof info` names this GPU's");
}

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
        "no chip known (no run in the store); pass --chip CHIP (e.g. GH100) to count them";
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
    std::error_code error;            // exists, not opened: opening a FIFO would block
    std::string chip = request.chip;  // --metrics' passes: --chip, else the newest run's chip
    if (!chip.empty()) check_chip(chip);
    if (std::filesystem::exists(options.db, error)) {
      ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_only);
      for (const Run& run : store.list_runs()) {
        if (!run.machine.ceilings.empty()) measured = run.machine;
        if (!run.machine.gpu.chip.empty() && request.chip.empty()) chip = run.machine.gpu.chip;
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

void register_sweep(CLI::App& app, CommonOptions& options, Action& action) {
  auto args = std::make_shared<SweepArguments>();
  CLI::App* sweep = app.add_subcommand(
      "sweep",
      "Measure an operator over a grid of sizes (cuDNN conv2d or lstm, cuBLASLt gemm, or a TOML "
      "sweep file), point by point into the results store");
  add_sweep_options(*sweep, options, *args);
  sweep->add_option("operator", args->target, "a sweep file (.toml); or an operator below");
  for (const OperatorFamily& family : operator_families())
    add_family(*sweep, options, *args, family);
  sweep->require_subcommand(0, 1);
  sweep->footer(
      "Operators: `timeroof sweep OPERATOR --help` lists its axes, their values and defaults.\n"
      "Axis flags take lists and ranges: 1,2,4  1..1024:x2  16..128:+16  fp16,fp32.\n"
      "Axes left out stay at the baseline; with no axis flag the default sweep runs.\n"
      "Options: --transfer none|h2d_input|h2d_input_d2h_output  --host pinned|pageable\n"
      "         --l2 warm|cold  --name TEXT\n"
      "         --metrics NAME,...  raw CUPTI metrics stored per kernel (and summed per\n"
      "         operator where they add up); more may mean more replay passes\n\n"
      "Examples:\n  timeroof sweep conv2d --dry-run\n"
      "  timeroof sweep conv2d --batch 1..1024:x2 --filters 64,128 --precision fp16,fp32\n"
      "  timeroof sweep lstm --batch 16..128:x2 --hidden-size 16..128:x2\n"
      "  timeroof sweep gemm --m 1024..8192:x2 --n 4096 --k 4096 --precision bf16,fp8_e4m3\n"
      "  timeroof sweep my-sweep.toml --l2 cold\n  timeroof sweep conv2d --resume 3\n"
      "  timeroof sweep conv2d --metrics dram__bytes_read.sum,sm__cycles_elapsed.avg\n"
      "  timeroof sweep conv2d --devices all\n"
      "  timeroof sweep conv2d --shard 1/4 --db shard-%r.db   (then: timeroof merge all.db "
      "shard-*.db)\n"
      "  mpirun -np 8 timeroof sweep lstm --shard-from-mpi --db shard-%r.db\n\n"
      "In --db, %r is the shard index: each shard its own store file.\n"
      "Ctrl-C finishes the current point, stores it and exits with code 3.");
  sweep->final_callback([sweep, args, &options, &action] {
    const std::vector<CLI::App*> chosen = sweep->get_subcommands();
    args->family_command = chosen.empty() ? nullptr : chosen.front();
    args->family = chosen.empty() ? nullptr : args->families.at(chosen.front());
    if (!args->family && args->target.empty()) throw CLI::RequiredError("operator");
    // Options given on both sides of the family's name, which CLI11 checks per command.
    const auto given = [&](const char* name) {
      return sweep->get_option(name)->count() +
                 (args->family_command ? args->family_command->get_option(name)->count() : 0) >
             0;
    };
    for (const auto& [a, b] :
         {std::pair{"--dry-run", "--resume"}, std::pair{"--shard", "--shard-from-mpi"},
          std::pair{"--device", "--devices"}})
      if (given(a) && given(b)) throw CLI::ExcludesError(a, b);
    action = [sweep, args, &options] { return run_sweep_command(options, *args, *sweep); };
  });  // when_chosen's, with the checks above
}

}  // namespace timeroof::cli
