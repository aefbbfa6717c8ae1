#include "gpu/driver.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "gpu/check.hpp"

namespace timeroof {

namespace {
DriverApi load() {
  TR_CUDA_CHECK(cudaFree(nullptr));  // initialises the driver and the primary context
  DriverApi api;
  resolve_driver_function("cuCtxGetCurrent", api.cuCtxGetCurrent);
  resolve_driver_function("cuGetErrorString", api.cuGetErrorString);
  resolve_driver_function("cuGetErrorName", api.cuGetErrorName);
  resolve_driver_function("cuDeviceGetAttribute", api.cuDeviceGetAttribute);
  return api;
}
}  // namespace

void* driver_function(const char* symbol) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  TR_CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &address, CUDART_VERSION,
                                                 cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !address) {
    throw GpuError("CUDA driver", 0,
                   std::string("the NVIDIA driver has no ") + symbol +
                       "; update the driver to one that supports CUDA " +
                       std::to_string(CUDART_VERSION / 1000) + "." +
                       std::to_string(CUDART_VERSION % 1000 / 10));
  }
  return address;
}

const DriverApi& driver_api() {
  static const DriverApi api = load();
  return api;
}

CUcontext current_context() {
  TR_CUDA_CHECK(cudaFree(nullptr));
  CUcontext context = nullptr;
  TR_CU_CHECK(driver_api().cuCtxGetCurrent(&context));
  return context;
}

}  // namespace timeroof
