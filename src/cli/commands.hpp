// The subcommands. Each returns the exit code or throws timeroof::Error.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/results.hpp"
#include "src/cli/gpu_backend.hpp"
#include "src/cli/shard.hpp"

namespace CLI {
class App;
}

namespace timeroof::cli {

struct CommonOptions {
  std::string db = "timeroof.db";
  std::string out;
  int device = 0;
  std::string devices;  // --devices all|0,2,5: one worker process per GPU; "" = --device
  bool json = false;
  std::string command_line;  // as typed, for provenance
};

// What main() runs once the command line is parsed: the chosen command's run
// function with its arguments, set by that command's register function.
using Action = std::function<ExitCode()>;

// Every command, in `timeroof --help` order: each register function adds its
// subcommand (options, help, examples) and, when it is chosen, sets `action` to
// its run function below with the parsed arguments.
// The register functions share one shape on purpose (subcommand, its flags, a
// footer of examples, when_chosen), so each command reads whole in one place;
// `duplicates` pairs them.
void register_commands(CLI::App& app, CommonOptions& options, Action& action);
// `timeroof run` and `timeroof ceilings` (src/cli/measure_commands.cpp).
void register_main_job(CLI::App& app, CommonOptions& options, Action& action);
void register_ceilings(CLI::App& app, CommonOptions& options, Action& action);
// `timeroof sweep FILE.toml` and `timeroof sweep <family>`, one subcommand per family
// of the registry with the family's axes as options (src/cli/sweep_command.cpp).
void register_sweep(CLI::App& app, CommonOptions& options, Action& action);
// `timeroof analyze` (src/cli/analyze.cpp).
void register_analyze(CLI::App& app, CommonOptions& options, Action& action);
// `timeroof compare` (src/cli/compare.cpp).
void register_compare(CLI::App& app, CommonOptions& options, Action& action);
// `timeroof profile -- CMD` (src/cli/profile.cpp).
void register_profile(CLI::App& app, CommonOptions& options, Action& action);
// `timeroof completion bash|zsh|man` (src/cli/shell_files.cpp).
void register_completion(CLI::App& app, Action& action);

ExitCode run_info(const CommonOptions& options);
ExitCode run_main_job(const CommonOptions& options, const CeilingOptions& ceilings);
struct SweepRequest;
// --shard / --shard-from-mpi (`sharding`): measures that share of the points into a
// run whose spec records the shard (options.db with "%r" already expanded).
ExitCode run_sweep(const CommonOptions& options, const SweepRequest& request,
                   const std::string& resume, const SweepShard& sharding = {});
ExitCode run_ceilings(const CommonOptions& options, const CeilingOptions& ceilings);
ExitCode run_metrics(const CommonOptions& options, std::string chip, const std::string& filter,
                     const std::vector<std::string>& passes_for);
ExitCode run_list_runs(const CommonOptions& options);
// `format` json (default: the export document on stdout or into options.out) or csv
// (the tables of export_csv.hpp, one file each, into the directory options.out).
// `perfetto`, where given: instead, the Chrome-trace / Perfetto JSON of one
// profile run's trace (plots/perfetto_trace.hpp) into that file.
ExitCode run_export(const CommonOptions& options, const std::vector<std::string>& runs,
                    const std::string& format = "json", const std::string& perfetto = "");
ExitCode run_import(const CommonOptions& options, const std::vector<std::string>& files);
// `timeroof merge OUT IN...` (merge.hpp): the shard runs of the input stores
// joined, every other run copied, into OUT (created if absent) in one
// transaction. Exit code 3 when a merged run misses points.
ExitCode run_merge(const CommonOptions& options, const std::string& out,
                   const std::vector<std::string>& inputs);
// The report of runs from the store (all, or those named), or from export files
// (`from`), into options.out (default ./timeroof-report); prints index.html's path.
// `format` (svg, png, pdf): the chart files report.md references.
ExitCode run_report(const CommonOptions& options, const std::vector<std::string>& runs,
                    const std::vector<std::string>& from, const std::string& format = "svg");

// The runs of a file written by `timeroof export`; a usage error naming the file
// when it cannot be read or is not such a document.
std::vector<RunRecord> read_export_file(const std::string& path);

// Runs named on the command line: from export files (`from`), else from the store
// (all, or those named by id or uuid prefix). A usage error when there are none.
std::vector<RunRecord> load_runs(const CommonOptions& options, const std::vector<std::string>& runs,
                                 const std::vector<std::string>& from);
// Profile runs among `records` without ceilings of their own take those of the
// newest ceilings run of their GPU (roofline::attach_profile_roofs): among the
// --from files' runs, else the store's.
void attach_profile_roofs(std::vector<RunRecord>& records, const CommonOptions& options,
                          const std::vector<std::string>& from);
// The model's analysis of those runs (roofline/analysis.hpp) on stdout or into
// options.out: `format` table (default), csv (one row per point) or json.
ExitCode run_analyze(const CommonOptions& options, const std::vector<std::string>& runs,
                     const std::vector<std::string>& from, const std::string& requested_format);
// `timeroof compare BASE OTHER` (roofline/compare.hpp): each side an export file
// or run ids of the store separated by commas; `threshold` "5%" or "0.05" (empty:
// 5%); `format` table (default), json or csv. ExitCode::regression when a roof or
// point is worse beyond its noise.
ExitCode run_compare(const CommonOptions& options, const std::string& base,
                     const std::string& other, const std::string& threshold,
                     const std::string& requested_format);

}  // namespace timeroof::cli
