#include "counters/counter_access.hpp"
#include "gpu/device.hpp"
#include "src/cli/gpu_backend.hpp"

namespace timeroof::cli {

bool built_with_cuda() { return true; }

GpuAvailability find_gpus() {
  const GpuCount gpus = count_gpus();
  return {gpus.count, gpus.why_none};
}

GpuInfo inspect_gpu(int device) {
  GpuInfo gpu = query_gpu(device);
  gpu.chip = current_chip_name(device);
  gpu.counters = probe_counter_access();
  return gpu;
}

}  // namespace timeroof::cli
