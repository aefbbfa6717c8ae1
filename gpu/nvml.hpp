// NVML, loaded at run time: clocks, power, energy, clock limits and the driver
// version. It ships with the driver, not the toolkit, so the tool must run where
// it is absent.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace timeroof {

struct nvmlDevice_st;  // NVML's opaque device handle

// A PCI function's address without its function number: what NVML and CUDA both
// give for a GPU, in different spellings ("00000000:18:00.0", "0000:18:00.0").
struct PciAddress {
  unsigned domain = 0, bus = 0, device = 0;
  bool operator==(const PciAddress&) const = default;
};
// Reads "DOMAIN:BUS:DEVICE.FUNCTION" in hex, either spelling; nullopt otherwise.
std::optional<PciAddress> parse_pci_address(const std::string& bus_id);

class Nvml {
 public:
  // Loads libnvidia-ml.so.1 and initialises it; available() is false where it cannot.
  Nvml();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool available() const noexcept { return initialised_; }
  const std::string& why_unavailable() const noexcept { return why_; }

  enum class Clock { sm, memory };
  enum class Which { current, max, base };
  // Clock in Hz of the GPU with this PCI bus id, or nullopt if NVML cannot say.
  std::optional<double> clock_hz(const std::string& pci_bus_id, Clock clock, Which which) const;
  std::string driver_version() const;

  // Board power in watts (on Ampere and newer an average over the last second).
  std::optional<double> power_w(const std::string& pci_bus_id) const;
  // The energy counter in joules since the driver loaded (Volta and newer).
  std::optional<double> energy_j(const std::string& pci_bus_id) const;
  std::optional<double> power_limit_w(const std::string& pci_bus_id) const;  // enforced limit
  std::optional<double> temperature_c(const std::string& pci_bus_id) const;  // GPU die
  // Why the clocks are below their maximum now: nvmlClocksEventReason* bits.
  std::optional<unsigned long long> clock_event_reasons(const std::string& pci_bus_id) const;

  // The GPU's active NVLinks: where each goes, and the rate one link carries each
  // way: NVML's per-link speed (the line rate; an H100's 26.5625 GB/s against 25
  // GB/s of data), else its common speed, else the published data rate of the
  // links' NVLink version. nullopt where NVML cannot say or no link is active.
  struct NvLinks {
    double link_bytes_per_s = 0;  // one link, one direction
    std::string rate_source;      // where that rate comes from
    // Per active link: the PCI (domain, bus, device) of the GPU at its far end,
    // or nullopt where it ends at an NVSwitch (every GPU behind it is reachable).
    std::vector<std::optional<PciAddress>> peers;
  };
  std::optional<NvLinks> nvlinks(const std::string& pci_bus_id) const;

 private:
  // The device handle of a PCI bus id, or nullptr where NVML cannot find it.
  nvmlDevice_st* device(const std::string& pci_bus_id) const;
  std::optional<unsigned> field(nvmlDevice_st* handle, unsigned id, unsigned scope) const;
  template <typename Value, typename Raw>
  std::optional<Value> query(const std::string& pci_bus_id, const char* getter, double scale) const;

  void* library_ = nullptr;
  bool initialised_ = false;
  std::string why_;
};

}  // namespace timeroof
