// Names each kernel at its launch (launch_names.hpp says why): a CUPTI
// driver-API callback on the launch calls reads the launched handle's name from
// the driver (cuFuncGetName; cuKernelGetName for a CUkernel handle) while the
// handle is live, and keeps it by the launch's correlation id. The cost per
// launch: two driver queries, one string copy, one map insert under a mutex.
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

class LaunchNamer {
 public:
  explicit LaunchNamer(LaunchNames& names) : names_(names) {}
  LaunchNamer(const LaunchNamer&) = delete;
  LaunchNamer& operator=(const LaunchNamer&) = delete;

  // Enables kernel_launch_callbacks() on `subscriber`, whose callback passes
  // their callback data to on_driver_callback. Throws GpuError where the driver
  // cannot name a function (no libcuda, or one older than CUDA 12.3).
  static void enable_on(CuptiSubscriber& subscriber);

  // A driver-API callback: at a launch's entry names it, at its exit forgets a
  // launch that failed; other calls are ignored. Never throws: a launch the
  // driver cannot name keeps CUPTI's name.
  void on_driver_callback(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;

 private:
  LaunchNames& names_;
};

}  // namespace timeroof
