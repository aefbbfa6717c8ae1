#include "measure/machine.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "counters/counter_access.hpp"
#include "counters/range_profiler.hpp"
#include "counters/theoretical_peaks.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/interconnect.hpp"

namespace timeroof {
namespace {

std::function<bool(const std::string&)> one_of(std::vector<std::string> names) {
  return [names = std::move(names)](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
}

}  // namespace

void measure_machine(Machine& machine, const MachineRequest& request) {
  select_gpu(machine.gpu.index);
  const Stream stream;
  CeilingRequest ceilings;
  ceilings.device = machine.gpu.index;
  ceilings.stream = stream.get();
  ceilings.quick = request.quick;
  ceilings.gpu = machine.gpu;
  ceilings.host_lock = request.host_lock;
  ceilings.sustained_seconds = request.sustained_seconds;
  if (request.process_window && !request.quick) {
    ceilings.process_window = request.process_window;
    ceilings.host_windows = kHostProcessWindows;
  }
  if (!request.only.empty()) ceilings.wanted = one_of(request.only);
  int step = 0;
  ceilings.progress = [&](const std::string& family) {
    ++step;
    if (request.progress) request.progress(step, ceiling_family_count(), family);
  };
  const auto counters_available = [&machine] {
    const CounterAccess& probed = machine.gpu.counters;
    if (!probed.available && probed.reason.empty()) {  // only described: probe now
      machine.gpu.chip = current_chip_name(machine.gpu.index);
      machine.gpu.counters = probe_counter_access();
    }
    return machine.gpu.counters.available;
  };
  // A session per call, closed before the next roof is timed: the launch roofs,
  // which CUPTI's callbacks would slow, take their first window before any session
  // and their later ones after sessions closed (their medians are in the method).
  ceilings.profile = [&](const std::vector<std::string>& metrics,
                         const std::function<void(cudaStream_t)>& launch) -> std::vector<double> {
    if (!counters_available()) return {};
    try {
      ProfilerSession session;
      const ProfileResult result =
          session.profile_kernels(metrics, [&] { launch(ceilings.stream); });
      if (result.ranges.size() != 1) return {};
      return result.ranges.front().values;
    } catch (const CounterAccessError&) {  // taken by another profiler since the probe
      return {};
    }
  };
  CeilingResults results = measure_ceilings(ceilings);
  counters_available();

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

nlohmann::json measure_host_window(int device, const std::vector<std::string>& roofs, bool quick,
                                   int windows) {
  select_gpu(device);
  const Stream stream;
  CeilingRequest request;
  request.device = device;
  request.stream = stream.get();
  request.quick = quick;
  request.gpu = query_gpu(device);
  request.host_windows = windows;
  request.wanted = one_of(roofs);
  return host_window_document(request);
}

Machine measure_interconnect(const std::vector<int>& devices, bool quick) {
  CeilingResults results = measure_interconnect_ceilings(devices, quick);
  Machine machine;
  machine.gpu = query_gpu(devices.front());
  // The copy roofs over NVLink carry NVML's link rate (kernels/interconnect_ceilings.cpp).
  for (Ceiling& c : results.ceilings)
    if (!c.theoretical)
      c.theoretical_source =
          c.kind == CeilingKind::latency
              ? "none: a latency has no theoretical value here"
              : "none: no NVLink rate from NVML (PCIe peers, or NVML cannot say)";
  machine.ceilings = std::move(results.ceilings);
  machine.skipped = std::move(results.skipped);
  return machine;
}

}  // namespace timeroof
