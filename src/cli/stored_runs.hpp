// What the commands share about runs in the store: printing them, writing their
// report, and a measured run's life (begun with the roofs it adopts, finished, or
// failed on a throw). Used by commands.cpp, measure_commands.cpp and sweep_command.cpp.
#pragma once

#include <iostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_io.hpp"
#include "core/results.hpp"
#include "plots/report.hpp"
#include "src/cli/commands.hpp"

namespace timeroof {
class ResultsStore;
}

namespace timeroof::cli {

inline void print_json(const nlohmann::json& value) {
  std::cout << value.dump(2) << '\n';
}

// PREFIX/share/timeroof/<relative> beside an installed binary (PREFIX/bin/timeroof:
// `cmake --install` and the .deb) where that exists, else `in_source` (the source
// tree the binary was built from).
std::string installed_data(const std::string& relative, const std::string& in_source);

// The stored runs, as JSON or as text with where they are stored.
void print_records(const CommonOptions& options, const std::vector<RunRecord>& records);

// Writes the report of `records` into --out (default ./timeroof-report) and
// returns the path of its index.html; `written`, when given, receives the path of
// every file written.
std::string write_report_of(const CommonOptions& options, const std::vector<RunRecord>& records,
                            plots::ChartFormat format = plots::ChartFormat::svg,
                            const std::string& notice = {},
                            std::vector<std::string>* written = nullptr);

// A sweep measures no roofs of its own: its points are judged against the newest
// roofs of the same GPU (by UUID) in the store, copied into its run with where
// they came from in each method. Without any, its points say there is nothing
// to judge them against (roofline/classify.hpp, rule no_roof), never
// latency-bound against zeros (issue 16).
void adopt_roofs_of_the_same_gpu(ResultsStore& store, Run& run);

// Ends the run with `status` (failed, partial, complete) and stores that.
void finish_run(ResultsStore& store, Run& run, RunStatus status);

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

// --devices: each GPU identified (no context: the workers own the GPUs); `same_model`:
// the GPUs of one sweep must be one model, since its points are judged against
// one GPU's roofs.
std::vector<GpuInfo> identify_devices(const std::vector<int>& devices, bool same_model);
// The GPUs of --devices as a run's spec records them.
nlohmann::json devices_json(const std::vector<GpuInfo>& gpus);

}  // namespace timeroof::cli
