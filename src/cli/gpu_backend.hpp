// What the CLI needs from the GPU layers. Built against them when the CUDA
// toolkit is present (gpu_backend_cuda.cpp); in the analysis-only build
// (gpu_backend_none.cpp) every machine reports "no GPU" with the reason.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "core/vocabulary.hpp"

namespace timeroof::cli {

struct GpuAvailability {
  int count = 0;
  std::string why_none;  // one line, when count == 0
};

bool built_with_cuda();
GpuAvailability find_gpus();
// Properties, clocks, versions, and a real counter read (CounterAccess).
// Throws a usage error for a device index out of range.
GpuInfo inspect_gpu(int device);
// The same without the counter probe and the chip name, which load CUPTI: for a
// process that measures host-side times (the launch roofs) first. CUPTI, once
// loaded, stays attached and slows every later launch (docs/design.md).
GpuInfo describe_gpu(int device);
// Only what the device properties say (name, UUID, PCI bus, sizes): no context,
// CUPTI, NVML or cuDNN. For the parent of --devices, which measures nothing.
GpuInfo identify_gpu(int device);
// identify_gpu's with the clocks (NVML) and the driver's versions, still no
// context or CUPTI: for the parent of a profiled program (`timeroof profile`).
GpuInfo observe_gpu(int device);

// A full measurement holds each tensor and HBM roof's kernel for this long
// again, for the roof a long load keeps (issue 15: the tensor roofs settle
// power-capped a few milliseconds in); --quick skips it.
inline constexpr double kDefaultSustainedSeconds = 10;

struct CeilingOptions {
  bool quick = false;
  std::vector<std::string> only;  // empty: every roof
  std::string host_lock;          // CeilingRequest::host_lock (several GPUs at once)
  bool show_progress = true;      // "[2/6] transfer roofs" on a terminal
  double sustained_seconds = kDefaultSustainedSeconds;  // 0: no sustained loads
};

// CUPTI chip names this build knows, the base metrics of one chip (offline,
// no GPU needed), and the replay passes a metric set needs on a chip.
std::vector<std::string> supported_chips();
struct MetricDescription {
  std::string name;
  std::string type;         // counter, ratio, throughput
  std::string unit;         // of the values, as CUPTI names it: "byte", "nsecond", ...
  std::string hw_unit;      // the unit that counts it: "dram", "lts", "sm", ...
  std::string description;  // CUPTI's one line
};
std::vector<MetricDescription> chip_metrics(const std::string& chip);
std::size_t count_passes(const std::string& chip, const std::vector<std::string>& metrics);
// A sweep's extra metrics (--metrics), offline: the names `chip` does not have;
// with `chip` empty, those no chip this CUPTI knows has (the chip of the GPU is not
// known before a GPU is looked for). Empty in the analysis-only build, which cannot tell.
std::vector<std::string> unknown_metric_names(const std::string& chip,
                                              const std::vector<std::string>& metrics);
// The replay passes of the catalog's plan for an operator of this precision and
// math on `chip`, with `extra` metrics added (empty: the catalog's alone).
std::size_t plan_passes(const std::string& chip, Precision precision, MathMode math,
                        const std::vector<std::string>& extra);
// The raw metrics `timeroof profile` collects for each measured kernel on `chip`
// (the injection library's plan: every quantity of core/quantities.hpp but sparse
// work and the DRAM clock), sorted, and the replay passes they need; offline. On
// a GPU whose counters lack some, the library's plan leaves those out.
struct ProfileMetricPlan {
  std::vector<std::string> metrics;
  std::size_t passes = 0;
};
ProfileMetricPlan profile_metric_plan(const std::string& chip);

// Names --only accepts; empty in the analysis-only build.
std::vector<std::string> known_ceiling_names();

// measure/machine.hpp's measure_machine, with "[2/6] transfer roofs" on a terminal:
// the roofs of `machine.gpu` into `machine`, the counters probed after them.
void measure_machine(Machine& machine, const CeilingOptions& options);

// measure/machine.hpp's measure_interconnect: the node's roofs between `devices`.
Machine measure_interconnect(const std::vector<int>& devices, bool quick);

// measure/machine.hpp's measure_host_window: a device worker's "host_window" job.
nlohmann::json measure_host_window(int device, const std::vector<std::string>& roofs, bool quick,
                                   int windows);

}  // namespace timeroof::cli
