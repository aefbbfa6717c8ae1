// Kernel names taken at the launch, by correlation id (issues #17/#18).
//
// CUPTI names a kernel record after the kernel ran, through a function handle
// that may no longer be the launched one: cuDNN's runtime-compiled kernels are
// unloaded with their plans, and a record was seen carrying another point's
// kernel name (docs/design.md, "Kernel names can be stale"). At the launch the
// handle is live, so LaunchNamer (launch_namer.hpp) asks the driver for its name
// there and keeps it here; ActivityDecoder (activity_records.hpp) gives each
// kernel record the name launched under its correlation id. Kernels with no
// launch callback (graph launches) keep CUPTI's name.
//
// Pure C++, no CUDA: the join is tested on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace timeroof {

// Raw (mangled) kernel names by the correlation id of their launch. Thread-safe:
// launches come on the program's threads, records on CUPTI's buffer thread.
class LaunchNames {
 public:
  // The launch with this correlation id runs `raw_name` (copied: the driver owns
  // the string it returned).
  void record(std::uint32_t correlation_id, std::string_view raw_name);
  // The launch failed: no kernel record will come for it.
  void forget(std::uint32_t correlation_id);
  // The name launched under this id, removed (each launch has one kernel record);
  // std::nullopt where no launch was named (graph launches, launches before the
  // callback was on).
  std::optional<std::string> take(std::uint32_t correlation_id);
  std::size_t size() const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uint32_t, std::string> names_;
};

// The kernel name a record gets: the launch's where there is one, else CUPTI's.
// `renamed` when both exist and differ (a stale CUPTI name corrected).
struct ChosenKernelName {
  std::string raw;  // mangled, as the driver and CUPTI give it
  bool from_launch = false;
  bool renamed = false;
};

ChosenKernelName choose_kernel_name(const char* cupti_raw_name,
                                    const std::optional<std::string>& launch_raw_name);

}  // namespace timeroof
