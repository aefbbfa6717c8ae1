// Names each kernel at its launch (launch_names.hpp says why): a CUPTI
// driver-API callback on the launch calls reads the launched handle's name from
// the driver (cuFuncGetName; cuKernelGetName for a CUkernel handle) while the
// handle is live, and keeps it by the launch's correlation id. The driver is
// asked once per handle: names are cached by handle (KernelNameCache,
// launch_names.hpp), and the cache is emptied at every module or library
// unload and context destruction, the only ways a handle's address can come to
// name another kernel. The cost per launch: a shared-lock hash lookup and a map
// insert under a mutex; the first launch of a handle adds the driver's queries.
//
// CUPTI allows one callback subscriber per process, so the subscriber is its own
// type that its owner shares: the activity tracer subscribes for the namer alone,
// the injection library (inject/) for the namer and its kernel counters.
#pragma once

#include <cupti_callbacks.h>

#include <span>

#include "counters/launch_names.hpp"

namespace timeroof {

// The process's one CUPTI callback subscriber; unsubscribes when destroyed.
class CuptiSubscriber {
 public:
  // Throws GpuError when CUPTI refuses, e.g. CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
  // while another tool (Nsight Systems, a profiler in the program) subscribes.
  CuptiSubscriber(CUpti_CallbackFunc callback, void* userdata);
  ~CuptiSubscriber();
  CuptiSubscriber(CuptiSubscriber&& other) noexcept;
  CuptiSubscriber& operator=(CuptiSubscriber&& other) noexcept;
  CuptiSubscriber(const CuptiSubscriber&) = delete;
  CuptiSubscriber& operator=(const CuptiSubscriber&) = delete;

  void enable(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
  CUpti_SubscriberHandle get() const noexcept { return handle_; }

 private:
  CUpti_SubscriberHandle handle_ = nullptr;
};

// The driver calls that launch one kernel through a function handle (and their
// per-thread-stream forms). Graph launches are not among them: their kernels keep
// CUPTI's names.
std::span<const CUpti_CallbackId> kernel_launch_callbacks();
bool is_kernel_launch_callback(CUpti_CallbackId cbid);

// The driver calls that may free launch handles (module and library unloads,
// context destruction): the name cache is emptied on their entry and exit.
bool is_code_unload_callback(CUpti_CallbackId cbid);

// The driver's name queries; null where the driver lacks one.
struct KernelNameQueries {
  CUresult (*function_name)(const char**, CUfunction) = nullptr;  // cuFuncGetName
  CUresult (*kernel_name)(const char**, CUkernel) = nullptr;      // cuKernelGetName
};

// libcuda's own, looked up once (loading libcuda if no CUDA call did yet;
// loading does not initialise CUDA).
const KernelNameQueries& driver_name_queries();

class LaunchNamer {
 public:
  // `queries`: the driver's; a test passes its own.
  explicit LaunchNamer(LaunchNames& names, const KernelNameQueries& queries = driver_name_queries())
      : names_(names), queries_(queries) {}
  LaunchNamer(const LaunchNamer&) = delete;
  LaunchNamer& operator=(const LaunchNamer&) = delete;

  // Enables kernel_launch_callbacks(), the code unload calls and the resource
  // callbacks of module unloads and context destruction on `subscriber`, whose
  // callback passes them to on_driver_callback and on_resource_callback.
  // Empties the name cache and zeroes its counts: unloads before now went
  // unseen. Throws GpuError where the driver cannot name a function (no
  // libcuda, or one older than CUDA 12.3).
  void enable_on(CuptiSubscriber& subscriber);

  // A driver-API callback: at a launch's entry names it (from the cache, else
  // the driver), at its exit forgets a launch that failed; a code unload
  // empties the cache; other calls are ignored. Never throws: a launch the
  // driver cannot name keeps CUPTI's name.
  void on_driver_callback(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;
  // A resource callback: a module unloading or a context being destroyed
  // empties the cache (also where the unload is the runtime's own, with no
  // driver call of the program's to see); others are ignored.
  void on_resource_callback(CUpti_CallbackId cbid) noexcept;

  // Launches named from the cache, by asking the driver, and cache clears,
  // since enable_on.
  NameCacheCounts cache_counts() const { return cache_.counts(); }

 private:
  // The driver's name for a launched handle, or nullptr.
  const char* query_name(CUfunction function) const noexcept;

  LaunchNames& names_;
  KernelNameQueries queries_;
  KernelNameCache cache_;
};

}  // namespace timeroof
