// The runs the commands store and print (stored_runs.hpp).
#include "src/cli/stored_runs.hpp"

#include <filesystem>
#include <iostream>
#include <optional>

#include "src/cli/console.hpp"
#include "src/cli/gpu_backend.hpp"
#include "src/store/results_store.hpp"

namespace timeroof::cli {

namespace {

constexpr const char* kDefaultReportDir = "timeroof-report";

}  // namespace

std::string write_report_of(const CommonOptions& options, const std::vector<RunRecord>& records,
                            plots::ChartFormat format, const std::string& notice,
                            std::vector<std::string>* written) {
  const std::string dir = options.out.empty() ? kDefaultReportDir : options.out;
  const std::vector<std::string> files = plots::write_report(records, dir, format, notice);
  if (written)
    for (const std::string& name : files)
      written->push_back((std::filesystem::path(dir) / name).string());
  return (std::filesystem::path(dir) / "index.html").string();
}

std::string installed_data(const std::string& relative, const std::string& in_source) {
  std::error_code error;
  const std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed =
        binary.parent_path().parent_path() / "share/timeroof" / relative;
    if (std::filesystem::exists(installed, error)) return installed.string();
  }
  return in_source;
}

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

void finish_run(ResultsStore& store, Run& run, RunStatus status) {
  run.status = to_string(status);
  run.finished_at = utc_now_iso8601();
  store.update_run(run);
}

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

}  // namespace timeroof::cli
