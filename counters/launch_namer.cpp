// generated_cuda_meta.h (the launch functions' parameter structs) names the
// legacy v1 types, which cuda.h declares only for this; the driver functions
// called here are looked up by their exported names, so its name mapping does
// not matter.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "counters/launch_namer.hpp"

#include <cupti_driver_cbid.h>
#include <dlfcn.h>
#include <generated_cuda_meta.h>

#include <algorithm>
#include <utility>

#include "gpu/check_cupti.hpp"

namespace timeroof {

namespace {

constexpr CUpti_CallbackId kKernelLaunchCallbacks[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};

// The driver's name queries, from libcuda itself (loaded here if no CUDA call
// loaded it yet; loading does not initialise CUDA): no runtime call inside a
// driver callback, and the injection library must not start a CUDA runtime of
// its own. Kept open for the process's life.
struct NameQueries {
  CUresult (*function_name)(const char**, CUfunction) = nullptr;
  CUresult (*kernel_name)(const char**, CUkernel) = nullptr;
};

NameQueries load_name_queries() {
  NameQueries queries;
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) return queries;
  queries.function_name =
      reinterpret_cast<CUresult (*)(const char**, CUfunction)>(dlsym(driver, "cuFuncGetName"));
  queries.kernel_name =
      reinterpret_cast<CUresult (*)(const char**, CUkernel)>(dlsym(driver, "cuKernelGetName"));
  return queries;
}

// Resolved by enable_on, before any callback: dlopen inside a launch callback
// could wait on the loader lock while holding the driver's.
const NameQueries& name_queries() {
  static const NameQueries queries = load_name_queries();
  return queries;
}

// The handle a launch call runs: cuLaunchKernelEx has its config first,
// cuLaunchKernel and cuLaunchCooperativeKernel (and their _ptsz) the function.
CUfunction launched_function(CUpti_CallbackId cbid, const void* params) {
  if (params == nullptr) return nullptr;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz)
    return static_cast<const cuLaunchKernelEx_params*>(params)->f;
  return static_cast<const cuLaunchKernel_params*>(params)->f;
}

}  // namespace

CuptiSubscriber::CuptiSubscriber(CUpti_CallbackFunc callback, void* userdata) {
  TR_CUPTI_CHECK(cuptiSubscribe(&handle_, callback, userdata));
}

CuptiSubscriber::~CuptiSubscriber() {
  if (handle_) TR_CUPTI_WARN(cuptiUnsubscribe(handle_));
}

CuptiSubscriber::CuptiSubscriber(CuptiSubscriber&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)) {}

CuptiSubscriber& CuptiSubscriber::operator=(CuptiSubscriber&& other) noexcept {
  if (this != &other) {
    if (handle_) TR_CUPTI_WARN(cuptiUnsubscribe(handle_));
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void CuptiSubscriber::enable(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  TR_CUPTI_CHECK(cuptiEnableCallback(1, handle_, domain, cbid));
}

std::span<const CUpti_CallbackId> kernel_launch_callbacks() {
  return kKernelLaunchCallbacks;
}

bool is_kernel_launch_callback(CUpti_CallbackId cbid) {
  return std::find(std::begin(kKernelLaunchCallbacks), std::end(kKernelLaunchCallbacks), cbid) !=
         std::end(kKernelLaunchCallbacks);
}

void LaunchNamer::enable_on(CuptiSubscriber& subscriber) {
  if (name_queries().function_name == nullptr)
    throw GpuError("CUDA driver", 0,
                   "the NVIDIA driver has no cuFuncGetName (CUDA 12.3 and later have it), so "
                   "kernels cannot be named at their launch");
  for (CUpti_CallbackId cbid : kKernelLaunchCallbacks)
    subscriber.enable(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
}

void LaunchNamer::on_driver_callback(CUpti_CallbackId cbid,
                                     const CUpti_CallbackData& call) noexcept {
  if (!is_kernel_launch_callback(cbid)) return;
  if (call.callbackSite == CUPTI_API_EXIT) {
    const auto* result = static_cast<const CUresult*>(call.functionReturnValue);
    if (result && *result != CUDA_SUCCESS) names_.forget(call.correlationId);
    return;
  }
  const CUfunction function = launched_function(cbid, call.functionParams);
  const NameQueries& queries = name_queries();
  const char* name = nullptr;
  // A CUkernel cast to CUfunction is a valid launch handle too (a library's
  // kernel): what cuFuncGetName does not name, cuKernelGetName may.
  if (function && queries.function_name && queries.function_name(&name, function) != CUDA_SUCCESS)
    name = nullptr;
  if (!name && function && queries.kernel_name &&
      queries.kernel_name(&name, reinterpret_cast<CUkernel>(function)) != CUDA_SUCCESS)
    name = nullptr;
  if (name == nullptr || *name == '\0') return;  // CUPTI's name stays
  try {
    names_.record(call.correlationId, name);
  } catch (...) {  // no memory for the copy: CUPTI's name stays
  }
}

}  // namespace timeroof
