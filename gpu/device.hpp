// What the machine has: GPUs, their properties, clocks and library versions.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "core/power.hpp"
#include "core/results.hpp"

namespace timeroof {

class Nvml;

struct GpuCount {
  int count = 0;
  std::string why_none;  // when count == 0: the runtime's reason, in one line
};

// "9.14.0" for cudnnGetVersion()'s 91400 (major * 10000 + minor * 100 + patch, cuDNN 9).
std::string cudnn_version_text(std::size_t version);

// Never throws: a machine without driver or GPU yields count 0 and the reason.
GpuCount count_gpus();

// Throws a usage error when `index` is out of range, naming the valid range.
void select_gpu(int index);

// The GPU's PCI bus id as CUDA spells it ("0000:18:00.0").
std::string pci_bus_id(int index);

// Properties, clocks (NVML, where present) and library versions of one GPU.
// `counters` is left empty: the counters layer fills it.
GpuInfo query_gpu(int index);
// What the device properties say (name, UUID, PCI bus, compute capability, SM
// count, sizes), without making the device current, creating a context, or
// loading NVML or cuDNN: for a process that only hands the GPU to others.
GpuInfo identify_gpu(int index);
// identify_gpu's, with the clocks (NVML) and the driver's versions, still without
// a context, CUPTI or cuDNN: for the parent of a profiled program, whose own
// libraries (not timeroof's) it records (core/trace_events.hpp, LoadedLibrary).
GpuInfo observe_gpu(int index);

// Current SM and memory clocks in Hz, read through NVML; nullopt where NVML is
// missing. `power` only where asked for (ClockReader::read_with_power).
struct Clocks {
  std::optional<double> sm_hz;
  std::optional<double> mem_hz;
  std::optional<PowerSample> power;
};
Clocks read_clocks(int index);

// Reads the clocks of one GPU repeatedly without reloading NVML each time.
class ClockReader {
 public:
  explicit ClockReader(int index);
  ~ClockReader();
  ClockReader(const ClockReader&) = delete;
  ClockReader& operator=(const ClockReader&) = delete;
  Clocks read() const;
  // The clocks and the energy counter, temperature and clock-event reasons:
  // three more NVML calls, for measurements that report their power.
  Clocks read_with_power() const;
  std::optional<double> power_limit_w() const;

 private:
  std::unique_ptr<Nvml> nvml_;
  std::string pci_bus_id_;
};

}  // namespace timeroof
