#include "counters/counter_access.hpp"

#include <cmath>
#include <cstdio>

#include "counters/probe_kernel.hpp"
#include "counters/range_profiler.hpp"
#include "gpu/check_cupti.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"

namespace timeroof {

CounterAccess probe_counter_access() {
  CounterAccess access;
  try {
    ProfilerSession session;
    const FfmaProbe probe;
    DeviceBuffer<float> out(static_cast<std::size_t>(probe.blocks) * probe.threads);
    const ProfileResult result = session.profile_kernels(
        {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "gpu__time_duration.sum"},
        [&] { launch_ffma_probe(probe, out.get(), nullptr); });
    if (result.ranges.size() != 1) {
      access.reason = "the range profiler returned " + std::to_string(result.ranges.size()) +
                      " ranges for one probe kernel";
      return access;
    }
    const double ffma = result.ranges[0].values[0];
    const double nanoseconds = result.ranges[0].values[1];
    if (std::fabs(ffma - probe.expected_ffma()) > 0.5) {
      char text[160];
      std::snprintf(text, sizeof text, "probe kernel counted %.0f FFMA, expected %.0f", ffma,
                    probe.expected_ffma());
      access.reason = text;
      access.fix = "report this GPU and driver: the counters are not trustworthy here";
      return access;
    }
    char text[200];
    std::snprintf(text, sizeof text,
                  "read a probe kernel on %s: %.0f FFMA as expected, %.1f us, %zu pass(es)",
                  session.chip().c_str(), ffma, nanoseconds * 1e-3, result.passes);
    access.available = true;
    access.evidence = text;
  } catch (const CounterAccessError& e) {
    access.reason = e.reason();
    access.fix = e.fix();
    access.busy = e.busy();
  } catch (const GpuError& e) {
    if (e.library() == "CUPTI" && e.status() == CUPTI_ERROR_HARDWARE_BUSY) {
      const CounterAccessError busy = counters_busy_error("the counter probe");
      access.reason = busy.reason();
      access.fix = busy.fix();
      access.busy = true;
    } else {
      access.reason = e.what();
    }
  } catch (const Error& e) {
    access.reason = e.what();
  }
  return access;
}

std::string current_chip_name(int device_index) {
  try {
    const ProfilerInitialization initialization;
    return chip_name(device_index);
  } catch (const CounterAccessError&) {
    return {};  // the counter probe reports why
  }
}

GpuInfo inspect_gpu(int device) {
  GpuInfo gpu = query_gpu(device);
  gpu.chip = current_chip_name(device);
  gpu.counters = probe_counter_access();
  return gpu;
}

}  // namespace timeroof
