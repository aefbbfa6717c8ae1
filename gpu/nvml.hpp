// NVML, loaded at run time: clocks and the driver version. It ships with the
// driver, not the toolkit, so the tool must run where it is absent.
#pragma once

#include <optional>
#include <string>

namespace timeroof {

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

 private:
  void* library_ = nullptr;
  bool initialised_ = false;
  std::string why_;
};

}  // namespace timeroof
