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

// Calls that may free CUfunction or CUkernel handles, whose addresses a later
// load may reuse for another kernel.
constexpr CUpti_CallbackId kCodeUnloadCallbacks[] = {
    CUPTI_DRIVER_TRACE_CBID_cuModuleUnload,
    CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload,
    CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy,
    CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGreenCtxDestroy,
};

// The same seen from the resource domain, which also sees unloads no driver
// call of the program made (the runtime's, at a context's end).
constexpr CUpti_CallbackId kCodeUnloadResources[] = {
    CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
    CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
};

template <std::size_t N>
bool contains(const CUpti_CallbackId (&ids)[N], CUpti_CallbackId cbid) {
  return std::find(std::begin(ids), std::end(ids), cbid) != std::end(ids);
}

// From libcuda itself: no runtime call inside a driver callback, and the
// injection library must not start a CUDA runtime of its own. Kept open for the
// process's life.
KernelNameQueries load_name_queries() {
  KernelNameQueries queries;
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) return queries;
  queries.function_name =
      reinterpret_cast<CUresult (*)(const char**, CUfunction)>(dlsym(driver, "cuFuncGetName"));
  queries.kernel_name =
      reinterpret_cast<CUresult (*)(const char**, CUkernel)>(dlsym(driver, "cuKernelGetName"));
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
  return contains(kKernelLaunchCallbacks, cbid);
}

bool is_code_unload_callback(CUpti_CallbackId cbid) {
  return contains(kCodeUnloadCallbacks, cbid);
}

// Looked up when a namer is made, before any callback: dlopen inside a launch
// callback could wait on the loader lock while holding the driver's.
const KernelNameQueries& driver_name_queries() {
  static const KernelNameQueries queries = load_name_queries();
  return queries;
}

void LaunchNamer::enable_on(CuptiSubscriber& subscriber) {
  if (queries_.function_name == nullptr)
    throw GpuError("CUDA driver", 0,
                   "the NVIDIA driver has no cuFuncGetName (CUDA 12.3 and later have it), so "
                   "kernels cannot be named at their launch");
  cache_.reset();
  // The unloads first: a name cached from now on is cleared by the next one.
  for (CUpti_CallbackId cbid : kCodeUnloadResources)
    subscriber.enable(CUPTI_CB_DOMAIN_RESOURCE, cbid);
  for (CUpti_CallbackId cbid : kCodeUnloadCallbacks)
    subscriber.enable(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  for (CUpti_CallbackId cbid : kKernelLaunchCallbacks)
    subscriber.enable(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
}

const char* LaunchNamer::query_name(CUfunction function) const noexcept {
  const char* name = nullptr;
  // A CUkernel cast to CUfunction is a valid launch handle too (a library's
  // kernel): what cuFuncGetName does not name, cuKernelGetName may.
  if (queries_.function_name && queries_.function_name(&name, function) != CUDA_SUCCESS)
    name = nullptr;
  if (!name && queries_.kernel_name &&
      queries_.kernel_name(&name, reinterpret_cast<CUkernel>(function)) != CUDA_SUCCESS)
    name = nullptr;
  return name;
}

void LaunchNamer::on_driver_callback(CUpti_CallbackId cbid,
                                     const CUpti_CallbackData& call) noexcept {
  if (is_code_unload_callback(cbid)) {
    // On entry: no other thread may hit a name of a handle this call frees.
    // On exit: nothing cached while it ran outlives it.
    cache_.clear();
    return;
  }
  if (!is_kernel_launch_callback(cbid)) return;
  if (call.callbackSite == CUPTI_API_EXIT) {
    const auto* result = static_cast<const CUresult*>(call.functionReturnValue);
    if (result && *result != CUDA_SUCCESS) names_.forget(call.correlationId);
    return;
  }
  const CUfunction function = launched_function(cbid, call.functionParams);
  if (function == nullptr) return;
  try {
    KernelNameCache::Lookup cached = cache_.find(function);
    LaunchNames::Name name = std::move(cached.name);
    if (!name) {
      const char* queried = query_name(function);
      if (queried == nullptr || *queried == '\0') return;  // CUPTI's name stays
      name = cache_.insert(function, queried, cached.generation);
    }
    names_.record(call.correlationId, std::move(name));
  } catch (...) {  // no memory for the copy: CUPTI's name stays
  }
}

void LaunchNamer::on_resource_callback(CUpti_CallbackId cbid) noexcept {
  if (contains(kCodeUnloadResources, cbid)) cache_.clear();
}

}  // namespace timeroof
