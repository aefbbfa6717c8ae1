// A machine's roofs, measured: the strategy `timeroof ceilings`, `run` and a
// --devices worker share. The ceiling kernels (kernels/ceilings.hpp) measure
// each roof; this adds their theoretical values from the counters (CUPTI peaks
// x the clock each roof ran at) and probes the counters after the roofs, so the
// launch roofs are timed before CUPTI is loaded (docs/design.md).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"

namespace timeroof {

struct MachineRequest {
  bool quick = false;             // reduced sizes and repeats (under 20 s)
  std::vector<std::string> only;  // the roofs to measure by name; empty: every roof
  std::string host_lock;          // CeilingRequest::host_lock (several GPUs at once)
  double sustained_seconds = 0;   // CeilingRequest::sustained_seconds
  // Called as each family of roofs starts: its 1-based step of `steps`; may be null.
  std::function<void(int step, std::size_t steps, const std::string& family)> progress;
  // CeilingRequest::process_window: where set (and not quick), the host-timed
  // roofs are measured in kHostProcessWindows windows, each in a process of its own.
  std::function<nlohmann::json(const std::vector<std::string>& roofs, int windows)> process_window;
};

// One window of the host-timed roofs named in `roofs` on GPU `device`, in this
// process (a device worker's "host_window" job): kernels/ceilings.hpp's
// host_window_document, each window with a `windows`-th of the sampling budget.
nlohmann::json measure_host_window(int device, const std::vector<std::string>& roofs, bool quick,
                                   int windows);

// Measures the roofs of `machine.gpu` (described or inspected) into `machine`:
// ceilings with theoretical values where counters allow, the working-set curve,
// and the roofs skipped with their reasons. A GPU only described (no counter
// probe yet) gets its chip name and counter probe once the roofs need counters:
// the L2 read roof's explanation, or the theoretical values after the roofs.
void measure_machine(Machine& machine, const MachineRequest& request);

// The node's interconnect roofs between `devices` (two or more GPUs of this
// process): per ordered pair the copy-engine and SM copy bandwidth and the
// access latency, and the NCCL all-reduce bus bandwidth where NCCL can be
// loaded (kernels/interconnect.hpp). Returned as a Machine holding only those
// ceilings and the roofs skipped with their reasons.
Machine measure_interconnect(const std::vector<int>& devices, bool quick);

}  // namespace timeroof
