#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "counters/counter_access.hpp"
#include "counters/metric_catalog.hpp"
#include "counters/metric_host.hpp"
#include "gpu/device.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/interconnect.hpp"
#include "measure/machine.hpp"
#include "src/cli/devices.hpp"
#include "src/cli/gpu_backend.hpp"

namespace timeroof::cli {

bool built_with_cuda() {
  return true;
}

GpuAvailability find_gpus() {
  const GpuCount gpus = count_gpus();
  return {gpus.count, gpus.why_none};
}

GpuInfo inspect_gpu(int device) {
  return timeroof::inspect_gpu(device);
}

GpuInfo describe_gpu(int device) {
  return query_gpu(device);
}

GpuInfo identify_gpu(int device) {
  return timeroof::identify_gpu(device);
}

GpuInfo observe_gpu(int device) {
  return timeroof::observe_gpu(device);
}

std::vector<std::string> supported_chips() {
  return MetricHost::supported_chips();
}

std::vector<MetricDescription> chip_metrics(const std::string& chip) {
  const MetricHost host(chip);
  std::vector<MetricDescription> metrics;
  for (const std::string& name : host.base_metrics()) {
    const MetricHost::Properties p = host.properties(name);
    metrics.push_back({name, p.type, p.unit, p.hw_unit, p.description});
  }
  return metrics;
}

std::size_t count_passes(const std::string& chip, const std::vector<std::string>& metrics) {
  return build_config(chip, metrics).passes;
}

std::vector<std::string> unknown_metric_names(const std::string& chip,
                                              const std::vector<std::string>& metrics) {
  if (!chip.empty()) return unknown_metrics(chip, metrics);
  std::vector<std::string> unknown = metrics;
  for (const std::string& each : MetricHost::supported_chips()) {
    if (unknown.empty()) break;
    try {
      unknown = unknown_metrics(each, unknown);  // what this chip has is known
    } catch (const Error&) {
      // CUPTI lists chips its host API refuses offline (CUPTI_ERROR_NOT_SUPPORTED
      // for some); those cannot vouch for a name.
    }
  }
  return unknown;
}

std::size_t plan_passes(const std::string& chip, Precision precision, MathMode math,
                        const std::vector<std::string>& extra) {
  OperatorNeeds needs;
  needs.precision = precision;
  needs.math = math;
  return plan_collection(chip, quantities_for(needs), {}, extra).passes();
}

ProfileMetricPlan profile_metric_plan(const std::string& chip) {
  const CollectionPlan plan = plan_collection(chip, quantities_for_any_kernel());
  return {plan.metrics, plan.passes()};
}

std::vector<std::string> known_ceiling_names() {
  std::vector<std::string> names = timeroof::known_ceiling_names();
  for (const std::string& name : interconnect_ceiling_names()) names.push_back(name);
  return names;
}

namespace {

// One window of the host-timed roofs `roofs` in a device worker of its own
// (CeilingRequest::process_window): the worker's {"host_window": document} line.
nlohmann::json host_window_in_worker(int device, const std::vector<std::string>& roofs,
                                     int windows) {
  WorkerProcess worker(
      own_executable(), device,
      nlohmann::json{
          {"kind", "host_window"}, {"roofs", roofs}, {"quick", false}, {"windows", windows}});
  std::optional<nlohmann::json> document;
  while (worker.read_available([&](const nlohmann::json& line) {
    if (line.contains("host_window")) document = line["host_window"];
  })) {
  }
  const int code = worker.wait();
  if (!document)
    throw environment_error("the host window's worker (" + own_executable() +
                            " device-worker) ended with " + std::to_string(code) +
                            " before its window");
  return *document;
}

}  // namespace

void measure_machine(Machine& machine, const CeilingOptions& options) {
  MachineRequest request;
  request.process_window = [device = machine.gpu.index](const std::vector<std::string>& roofs,
                                                        int windows) {
    return host_window_in_worker(device, roofs, windows);
  };
  request.quick = options.quick;
  request.only = options.only;
  request.host_lock = options.host_lock;
  request.sustained_seconds = options.sustained_seconds;
  const bool show_progress = options.show_progress && isatty(STDERR_FILENO);
  if (show_progress)
    request.progress = [](int step, std::size_t steps, const std::string& family) {
      std::fprintf(stderr, "\r\033[Ktimeroof: [%d/%zu] %s roofs", step, steps, family.c_str());
    };
  timeroof::measure_machine(machine, request);
  if (show_progress) std::fputs("\r\033[K", stderr);
}

Machine measure_interconnect(const std::vector<int>& devices, bool quick) {
  return timeroof::measure_interconnect(devices, quick);
}

nlohmann::json measure_host_window(int device, const std::vector<std::string>& roofs, bool quick,
                                   int windows) {
  return timeroof::measure_host_window(device, roofs, quick, windows);
}

}  // namespace timeroof::cli
