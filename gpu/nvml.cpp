#include "gpu/nvml.hpp"

#include <dlfcn.h>

#include <cstdio>

namespace timeroof {

namespace {
// The NVML ABI subset used here (stable since NVML 2.x; nvml.h is not part of
// the toolkit on every install, so the declarations are local).
using nvmlReturn_t = int;
using nvmlDevice_t = nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;

// nvmlFieldValue_t, nvmlPciInfo_t and the ids used with them (nvml.h).
constexpr unsigned kFieldNvLinkSpeedMbpsCommon = 90;
constexpr unsigned kFieldNvLinkLinkCount = 91;
constexpr unsigned kFieldNvLinkGetSpeed = 164;    // per link (scope): MB/s
constexpr unsigned kFieldNvLinkGetVersion = 166;  // per link (scope)
constexpr int kValueTypeUnsignedInt = 1;
constexpr int kNvLinkDeviceTypeGpu = 0;
constexpr int kNvLinkDeviceTypeSwitch = 2;
constexpr int kFeatureEnabled = 1;
struct NvmlFieldValue {
  unsigned field_id = 0;
  unsigned scope_id = 0;
  long long timestamp = 0;
  long long latency_usec = 0;
  int value_type = 0;
  nvmlReturn_t status = 0;
  union {
    double as_double;
    unsigned as_unsigned;
    unsigned long long as_unsigned_long_long;
  } value{};
};
static_assert(sizeof(NvmlFieldValue) == 40, "nvmlFieldValue_t's layout");
struct NvmlPciInfo {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

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

std::optional<PciAddress> parse_pci_address(const std::string& bus_id) {
  PciAddress address;
  unsigned function = 0;
  char end = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x%c", &address.domain, &address.bus, &address.device,
                  &function, &end) != 4)
    return std::nullopt;
  return address;
}

namespace {
// NVIDIA's published data rate of one link, one direction, by NVML's version
// code (nvmlNvlinkVersion_t, as NVML_FI_DEV_NVLINK_GET_VERSION gives it; an H100
// reads 6, NVLink 4.0).
double published_link_rate(unsigned version_code) {
  switch (version_code) {
    case 1:  // 1.0, P100
      return 20e9;
    case 2:  // 2.0, V100
    case 3:  // 2.2
    case 4:  // 3.0, A100
    case 5:  // 3.1
    case 6:  // 4.0, H100 and H200
      return 25e9;
    case 7:  // 5.0, B200
      return 50e9;
    default:
      return 0;
  }
}
}  // namespace

// One unsigned field of a link (scope = the link) or of the device; nullopt where
// NVML does not give it (a VM's H100 gave no NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON).
std::optional<unsigned> Nvml::field(nvmlDevice_st* handle, unsigned id, unsigned scope) const {
  auto fields = symbol<nvmlReturn_t (*)(nvmlDevice_t, int, NvmlFieldValue*)>(
      library_, "nvmlDeviceGetFieldValues");
  NvmlFieldValue value;
  value.field_id = id;
  value.scope_id = scope;
  if (!fields || fields(handle, 1, &value) != kNvmlSuccess || value.status != kNvmlSuccess ||
      value.value_type != kValueTypeUnsignedInt)
    return std::nullopt;
  return value.value.as_unsigned;
}

std::optional<Nvml::NvLinks> Nvml::nvlinks(const std::string& pci_bus_id) const {
  const nvmlDevice_t handle = device(pci_bus_id);
  if (!handle) return std::nullopt;
  auto state =
      symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned, int*)>(library_, "nvmlDeviceGetNvLinkState");
  auto remote_type = symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned, int*)>(
      library_, "nvmlDeviceGetNvLinkRemoteDeviceType");
  auto remote_pci = symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned, NvmlPciInfo*)>(
      library_, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  const std::optional<unsigned> link_count = field(handle, kFieldNvLinkLinkCount, 0);
  if (!state || !remote_type || !remote_pci || !link_count) return std::nullopt;
  NvLinks links;
  for (unsigned link = 0; link < *link_count; ++link) {
    int active = 0;
    int type = -1;
    if (state(handle, link, &active) != kNvmlSuccess || active != kFeatureEnabled) continue;
    if (links.link_bytes_per_s <= 0) {  // the links of one GPU run at one rate
      if (const auto speed = field(handle, kFieldNvLinkGetSpeed, link); speed && *speed > 0) {
        links.link_bytes_per_s = 1e6 * *speed;  // MB/s, decimal: the line rate
        links.rate_source = "NVML_FI_DEV_NVLINK_GET_SPEED, the link's line rate";
      } else if (const auto common = field(handle, kFieldNvLinkSpeedMbpsCommon, 0);
                 common && *common > 0) {
        links.link_bytes_per_s = 1e6 * *common;
        links.rate_source = "NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON";
      } else if (const auto version = field(handle, kFieldNvLinkGetVersion, link);
                 version && published_link_rate(*version) > 0) {
        links.link_bytes_per_s = published_link_rate(*version);
        links.rate_source =
            "the published data rate of NVML's NVLink version code " + std::to_string(*version);
      }
    }
    if (remote_type(handle, link, &type) != kNvmlSuccess) continue;
    if (type == kNvLinkDeviceTypeSwitch) {
      links.peers.emplace_back(std::nullopt);
    } else if (type == kNvLinkDeviceTypeGpu) {
      NvmlPciInfo info{};
      if (remote_pci(handle, link, &info) == kNvmlSuccess)
        links.peers.emplace_back(PciAddress{info.domain, info.bus, info.device});
    }
  }
  if (links.peers.empty() || links.link_bytes_per_s <= 0) return std::nullopt;
  return links;
}

}  // namespace timeroof
