// One check helper per C API. Each throws timeroof::GpuError with the failing
// call, file, line and the library's own message; the *_WARN variants only
// print, for destructors, which must not throw.
#pragma once

#include <cublas_api.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <cupti_result.h>

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
[[noreturn]] void fail_cuda(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void fail_driver(CUresult status, const char* call, const char* file, int line);
[[noreturn]] void fail_cupti(CUptiResult status, const char* call, const char* file, int line);
// Wrappers that know a better call text and their caller's location (the cuDNN
// graph layer, sweeps/cudnn_graph.cpp) call fail_cudnn directly.
[[noreturn]] void fail_cudnn(cudnnStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void fail_cublas(cublasStatus_t status, const char* call, const char* file, int line);
void warn(const char* library, int status, const char* message, const char* call, const char* file,
          int line) noexcept;
std::string cupti_message(CUptiResult status);
std::string driver_message(CUresult status);
// cudnnGetErrorString, then cudnnGetLastErrorString's detail (the graph API's
// only explanation of why a descriptor did not finalize), read once.
std::string cudnn_message(cudnnStatus_t status);
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
#define TR_CUPTI_CHECK(call)                                                       \
  do {                                                                             \
    const CUptiResult tr_status_ = (call);                                         \
    if (tr_status_ != CUPTI_SUCCESS)                                               \
      ::timeroof::check_detail::fail_cupti(tr_status_, #call, __FILE__, __LINE__); \
  } while (0)
#define TR_CUDNN_CHECK(call)                                                       \
  do {                                                                             \
    const cudnnStatus_t tr_status_ = (call);                                       \
    if (tr_status_ != CUDNN_STATUS_SUCCESS)                                        \
      ::timeroof::check_detail::fail_cudnn(tr_status_, #call, __FILE__, __LINE__); \
  } while (0)
#define TR_CUBLAS_CHECK(call)                                                       \
  do {                                                                              \
    const cublasStatus_t tr_status_ = (call);                                       \
    if (tr_status_ != CUBLAS_STATUS_SUCCESS)                                        \
      ::timeroof::check_detail::fail_cublas(tr_status_, #call, __FILE__, __LINE__); \
  } while (0)

// No-throw variants for destructors and cleanup paths.
#define TR_CUDA_WARN(call)                                                                       \
  do {                                                                                           \
    const cudaError_t tr_status_ = (call);                                                       \
    if (tr_status_ != cudaSuccess)                                                               \
      ::timeroof::check_detail::warn("CUDA runtime", tr_status_, cudaGetErrorString(tr_status_), \
                                     #call, __FILE__, __LINE__);                                 \
  } while (0)
#define TR_CUPTI_WARN(call)                                                                       \
  do {                                                                                            \
    const CUptiResult tr_status_ = (call);                                                        \
    if (tr_status_ != CUPTI_SUCCESS)                                                              \
      ::timeroof::check_detail::warn("CUPTI", tr_status_,                                         \
                                     ::timeroof::check_detail::cupti_message(tr_status_).c_str(), \
                                     #call, __FILE__, __LINE__);                                  \
  } while (0)
#define TR_CUDNN_WARN(call)                                                                       \
  do {                                                                                            \
    const cudnnStatus_t tr_status_ = (call);                                                      \
    if (tr_status_ != CUDNN_STATUS_SUCCESS)                                                       \
      ::timeroof::check_detail::warn("cuDNN", tr_status_,                                         \
                                     ::timeroof::check_detail::cudnn_message(tr_status_).c_str(), \
                                     #call, __FILE__, __LINE__);                                  \
  } while (0)
#define TR_CUBLAS_WARN(call)                                                                  \
  do {                                                                                        \
    const cublasStatus_t tr_status_ = (call);                                                 \
    if (tr_status_ != CUBLAS_STATUS_SUCCESS)                                                  \
      ::timeroof::check_detail::warn("cuBLAS", tr_status_, cublasGetStatusString(tr_status_), \
                                     #call, __FILE__, __LINE__);                              \
  } while (0)
