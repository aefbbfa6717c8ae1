#include "gpu/nvml.hpp"

#include <dlfcn.h>

namespace timeroof {

namespace {
// The NVML ABI subset used here (stable since NVML 2.x; nvml.h is not part of
// the toolkit on every install, so the declarations are local).
using nvmlReturn_t = int;
using nvmlDevice_t = nvmlDevice_st*;
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

nvmlDevice_t Nvml::device(const std::string& pci_bus_id) const {
  if (!initialised_) return nullptr;
  auto by_bus = symbol<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>(
      library_, "nvmlDeviceGetHandleByPciBusId_v2");
  nvmlDevice_t handle = nullptr;
  if (!by_bus || by_bus(pci_bus_id.c_str(), &handle) != kNvmlSuccess) return nullptr;
  return handle;
}

// A getter of the form nvmlReturn_t (nvmlDevice_t, Raw*), its value times `scale`.
template <typename Value, typename Raw>
std::optional<Value> Nvml::query(const std::string& pci_bus_id, const char* getter,
                                 double scale) const {
  const nvmlDevice_t handle = device(pci_bus_id);
  auto get = handle ? symbol<nvmlReturn_t (*)(nvmlDevice_t, Raw*)>(library_, getter) : nullptr;
  Raw raw{};
  if (!get || get(handle, &raw) != kNvmlSuccess) return std::nullopt;
  return static_cast<Value>(static_cast<double>(raw) * scale);
}

std::optional<double> Nvml::power_w(const std::string& pci_bus_id) const {
  return query<double, unsigned>(pci_bus_id, "nvmlDeviceGetPowerUsage", 1e-3);  // mW
}

std::optional<double> Nvml::energy_j(const std::string& pci_bus_id) const {
  return query<double, unsigned long long>(pci_bus_id, "nvmlDeviceGetTotalEnergyConsumption",
                                           1e-3);  // mJ
}

std::optional<double> Nvml::power_limit_w(const std::string& pci_bus_id) const {
  return query<double, unsigned>(pci_bus_id, "nvmlDeviceGetEnforcedPowerLimit", 1e-3);  // mW
}

std::optional<double> Nvml::temperature_c(const std::string& pci_bus_id) const {
  const nvmlDevice_t handle = device(pci_bus_id);
  constexpr int kNvmlTemperatureGpu = 0;
  auto get = handle ? symbol<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>(
                          library_, "nvmlDeviceGetTemperature")
                    : nullptr;
  unsigned celsius = 0;
  if (!get || get(handle, kNvmlTemperatureGpu, &celsius) != kNvmlSuccess) return std::nullopt;
  return celsius;
}

std::optional<unsigned long long> Nvml::clock_event_reasons(const std::string& pci_bus_id) const {
  // The same call under its pre-12.2 name, where the driver is older.
  if (auto reasons = query<unsigned long long, unsigned long long>(
          pci_bus_id, "nvmlDeviceGetCurrentClocksEventReasons", 1))
    return reasons;
  return query<unsigned long long, unsigned long long>(
      pci_bus_id, "nvmlDeviceGetCurrentClocksThrottleReasons", 1);
}

std::optional<double> Nvml::clock_hz(const std::string& pci_bus_id, Clock clock,
                                     Which which) const {
  const nvmlDevice_t device_handle = device(pci_bus_id);
  const char* getter = which == Which::current ? "nvmlDeviceGetClockInfo"
                       : which == Which::max   ? "nvmlDeviceGetMaxClockInfo"
                                               : "nvmlDeviceGetDefaultApplicationsClock";
  auto get = symbol<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>(library_, getter);
  unsigned mhz = 0;
  if (!device_handle || !get) return std::nullopt;
  if (get(device_handle, clock == Clock::sm ? kNvmlClockSm : kNvmlClockMem, &mhz) != kNvmlSuccess)
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
