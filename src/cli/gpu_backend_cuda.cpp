#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "counters/counter_access.hpp"
#include "counters/metric_host.hpp"
#include "counters/range_profiler.hpp"
#include "counters/theoretical_peaks.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/interconnect.hpp"
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

std::vector<std::string> supported_chips() {
  return MetricHost::supported_chips();
}

std::vector<std::string> chip_metrics(const std::string& chip) {
  return MetricHost(chip).base_metrics();
}

std::size_t count_passes(const std::string& chip, const std::vector<std::string>& metrics) {
  return build_config(chip, metrics).passes;
}

std::vector<std::string> known_ceiling_names() {
  std::vector<std::string> names = timeroof::known_ceiling_names();
  for (const std::string& name : interconnect_ceiling_names()) names.push_back(name);
  return names;
}

void measure_machine(Machine& machine, const CeilingOptions& options) {
  select_gpu(machine.gpu.index);
  const Stream stream;
  CeilingRequest request;
  request.device = machine.gpu.index;
  request.stream = stream.get();
  request.quick = options.quick;
  request.gpu = machine.gpu;
  request.host_lock = options.host_lock;
  if (!options.only.empty()) {
    request.wanted = [only = options.only](const std::string& name) {
      return std::find(only.begin(), only.end(), name) != only.end();
    };
  }
  const bool show_progress = options.show_progress && isatty(STDERR_FILENO);
  int step = 0;
  request.progress = [&](const std::string& family) {
    if (show_progress)
      std::fprintf(stderr, "\r\033[Ktimeroof: [%d/%zu] %s roofs", ++step, ceiling_family_count(),
                   family.c_str());
  };
  CeilingResults results = measure_ceilings(request);
  if (show_progress) std::fputs("\r\033[K", stderr);
  const CounterAccess& probed = machine.gpu.counters;
  if (!probed.available && probed.reason.empty()) {  // only described: probe now
    machine.gpu.chip = current_chip_name(machine.gpu.index);
    machine.gpu.counters = probe_counter_access();
  }

  // Theoretical roofs need the counters: CUPTI peaks x the clock each roof ran at.
  if (machine.gpu.counters.available) {
    ProfilerSession session;
    apply_theoretical_peaks(read_peak_rates(session), results.ceilings);
  } else {
    for (Ceiling& c : results.ceilings)
      c.theoretical_source = "none: counters unavailable (" + machine.gpu.counters.reason + ")";
  }
  machine.ceilings = std::move(results.ceilings);
  machine.working_set = std::move(results.working_set);
  machine.skipped = std::move(results.skipped);
}

Machine measure_interconnect(const std::vector<int>& devices, bool quick) {
  CeilingResults results = measure_interconnect_ceilings(devices, quick);
  Machine machine;
  machine.gpu = query_gpu(devices.front());
  for (Ceiling& c : results.ceilings)
    c.theoretical_source = "none: the link rate is not read (NVLink / PCIe generation and width)";
  machine.ceilings = std::move(results.ceilings);
  machine.skipped = std::move(results.skipped);
  return machine;
}

}  // namespace timeroof::cli
