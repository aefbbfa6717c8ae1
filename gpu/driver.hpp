// The few CUDA driver API functions timeroof needs, resolved through cudart's
// entry-point query instead of linking libcuda: the tool must start (and say
// "no GPU") on machines without the NVIDIA driver.
#pragma once

#include <cuda.h>

namespace timeroof {

struct DriverApi {
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
};

// Resolved once, on first use, after the runtime has initialised the driver.
// Throws GpuError when the driver is not present.
const DriverApi& driver_api();

// The driver function `symbol` as of this runtime's CUDA version (initialising
// the runtime if needed). Throws GpuError naming it when the driver lacks it.
void* driver_function(const char* symbol);
template <typename Fn>
void resolve_driver_function(const char* symbol, Fn& function) {
  function = reinterpret_cast<Fn>(driver_function(symbol));
}

// The primary context of the current device, creating it if needed.
CUcontext current_context();

}  // namespace timeroof
