#include "gpu/nvml.hpp"

#include <dlfcn.h>

namespace timeroof {

namespace {
// The NVML ABI subset used here (stable since NVML 2.x; nvml.h is not part of
// the toolkit on every install, so the declarations are local).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}
}  // namespace

Nvml::Nvml() {
  library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library_) {
    why_ = "libnvidia-ml.so.1 not found (it ships with the NVIDIA driver)";
    return;
  }
  auto init = symbol<nvmlReturn_t (*)()>(library_, "nvmlInit_v2");
  if (!init || init() != kNvmlSuccess) {
    why_ = "nvmlInit failed";
    return;
  }
  initialised_ = true;
}

Nvml::~Nvml() {
  if (initialised_) {
    if (auto shutdown = symbol<nvmlReturn_t (*)()>(library_, "nvmlShutdown")) shutdown();
  }
  if (library_) dlclose(library_);
}

std::optional<double> Nvml::clock_hz(const std::string& pci_bus_id, Clock clock,
                                     Which which) const {
  if (!initialised_) return std::nullopt;
  auto by_bus = symbol<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>(
      library_, "nvmlDeviceGetHandleByPciBusId_v2");
  const char* getter = which == Which::current ? "nvmlDeviceGetClockInfo"
                       : which == Which::max   ? "nvmlDeviceGetMaxClockInfo"
                                               : "nvmlDeviceGetDefaultApplicationsClock";
  auto get = symbol<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>(library_, getter);
  nvmlDevice_t device = nullptr;
  unsigned mhz = 0;
  if (!by_bus || !get || by_bus(pci_bus_id.c_str(), &device) != kNvmlSuccess) return std::nullopt;
  if (get(device, clock == Clock::sm ? kNvmlClockSm : kNvmlClockMem, &mhz) != kNvmlSuccess)
    return std::nullopt;
  return mhz * 1e6;
}

std::string Nvml::driver_version() const {
  if (!initialised_) return {};
  auto get = symbol<nvmlReturn_t (*)(char*, unsigned)>(library_, "nvmlSystemGetDriverVersion");
  char text[96] = {};
  if (!get || get(text, sizeof text) != kNvmlSuccess) return {};
  return text;
}

}  // namespace timeroof
