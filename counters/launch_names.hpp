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
// Asking the driver at every launch cost +2.7 us per traced launch (H100), so LaunchNamer keeps
// each handle's name in a KernelNameCache, emptied whenever code is unloaded: a handle's name can
// only change when its module, library or context is freed and the address reused.
//
// Pure C++, no CUDA: the join and the cache are tested on the CPU.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace timeroof {

// Raw (mangled) kernel names by the correlation id of their launch. Thread-safe:
// launches come on the program's threads, records on CUPTI's buffer thread.
class LaunchNames {
 public:
  using Name = std::shared_ptr<const std::string>;
  // The launch with this correlation id runs `raw_name` (copied: the driver owns
  // the string it returned).
  void record(std::uint32_t correlation_id, std::string_view raw_name);
  // Shared with the name cache: no copy per launch.
  void record(std::uint32_t correlation_id, Name raw_name);
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
  std::unordered_map<std::uint32_t, Name> names_;
};

// How launches were named since the cache was last reset.
struct NameCacheCounts {
  std::uint64_t hits = 0;     // named from the cache
  std::uint64_t queries = 0;  // asked the driver (the handle was not cached)
  std::uint64_t clears = 0;   // emptied because code was unloaded
};

// Launched handles' (CUfunction, CUkernel) names by the handle's value.
// Thread-safe; lookups share the lock. A name stays right while its handle
// lives; the handle's address may be reused once its module, library or
// context is freed, so the owner clears the cache on every unload (at the
// unload's start, so that no other thread can hit a freed handle's name while
// the unload runs). A name queried before a clear is not cached after it.
class KernelNameCache {
 public:
  struct Lookup {
    LaunchNames::Name name;        // null: not cached, ask the driver
    std::uint64_t generation = 0;  // pass to insert with the driver's answer
  };
  // Counts a hit or a query.
  Lookup find(const void* handle);
  // Caches the driver's name for `handle`, unless the cache was cleared since
  // the find that gave `generation` (the handle may have been freed since).
  LaunchNames::Name insert(const void* handle, std::string_view raw_name, std::uint64_t generation);
  // Code was unloaded: any handle may be freed and its address reused.
  void clear();
  // Empties the cache and zeroes the counts (a new subscriber: unloads
  // before it went unseen).
  void reset();
  NameCacheCounts counts() const;
  std::size_t size() const;

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<const void*, LaunchNames::Name> names_;
  std::uint64_t generation_ = 0;  // under mutex_; +1 per clear
  std::atomic<std::uint64_t> hits_{0};
  std::atomic<std::uint64_t> queries_{0};
  std::atomic<std::uint64_t> clears_{0};
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
