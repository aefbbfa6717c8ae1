// One check helper per C API. Each throws timeroof::GpuError with the failing
// call, file, line and the library's own message; the *_WARN variants only
// print, for destructors, which must not throw. This header has the CUDA runtime
// and driver ones; check_cupti.hpp, check_cudnn.hpp and check_cublas.hpp have
// their library's, so a file includes only the library headers it uses.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "core/error.hpp"

namespace timeroof {

// A failed GPU library call. Environment problems (no device, no permission,
// driver too old) map to ExitCode::environment; everything else too, since the
// user cannot fix them with flags.
class GpuError : public Error {
 public:
  GpuError(const std::string& library, int status, const std::string& message)
      : Error(ExitCode::environment, message), library_(library), status_(status) {}
  const std::string& library() const noexcept { return library_; }
  int status() const noexcept { return status_; }

 private:
  std::string library_;
  int status_;
};

namespace check_detail {
// Throws GpuError: "<library> error <status> (<message>) in <call> at <file>:<line>".
[[noreturn]] void fail(const char* library, int status, const std::string& message,
                       const char* call, const char* file, int line);
[[noreturn]] void fail_cuda(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void fail_driver(CUresult status, const char* call, const char* file, int line);
void warn(const char* library, int status, const char* message, const char* call, const char* file,
          int line) noexcept;
std::string driver_message(CUresult status);
}  // namespace check_detail

}  // namespace timeroof

#define TR_CUDA_CHECK(call)                                                       \
  do {                                                                            \
    const cudaError_t tr_status_ = (call);                                        \
    if (tr_status_ != cudaSuccess)                                                \
      ::timeroof::check_detail::fail_cuda(tr_status_, #call, __FILE__, __LINE__); \
  } while (0)
#define TR_CU_CHECK(call)                                                           \
  do {                                                                              \
    const CUresult tr_status_ = (call);                                             \
    if (tr_status_ != CUDA_SUCCESS)                                                 \
      ::timeroof::check_detail::fail_driver(tr_status_, #call, __FILE__, __LINE__); \
  } while (0)

// No-throw variants for destructors and cleanup paths.
#define TR_CUDA_WARN(call)                                                                       \
  do {                                                                                           \
    const cudaError_t tr_status_ = (call);                                                       \
    if (tr_status_ != cudaSuccess)                                                               \
      ::timeroof::check_detail::warn("CUDA runtime", tr_status_, cudaGetErrorString(tr_status_), \
                                     #call, __FILE__, __LINE__);                                 \
  } while (0)
#define TR_CU_WARN(call)                                                                           \
  do {                                                                                             \
    const CUresult tr_status_ = (call);                                                            \
    if (tr_status_ != CUDA_SUCCESS)                                                                \
      ::timeroof::check_detail::warn("CUDA driver", tr_status_,                                    \
                                     ::timeroof::check_detail::driver_message(tr_status_).c_str(), \
                                     #call, __FILE__, __LINE__);                                   \
  } while (0)
