#include "gpu/check.hpp"

#include <cstdio>
#include <string>

#include <cupti_result.h>

#include "gpu/driver.hpp"

namespace timeroof::check_detail {

namespace {
[[noreturn]] void fail(const char* library, int status, const std::string& message,
                       const char* call, const char* file, int line) {
  throw GpuError(library, status,
                 std::string(library) + " error " + std::to_string(status) + " (" + message +
                     ") in " + call + " at " + file + ":" + std::to_string(line));
}
}  // namespace

std::string cupti_message(CUptiResult status) {
  const char* text = nullptr;
  if (cuptiGetErrorMessage(status, &text) == CUPTI_SUCCESS && text) return text;
  if (cuptiGetResultString(status, &text) == CUPTI_SUCCESS && text) return text;
  return "unknown CUPTI error";
}

std::string driver_message(CUresult status) {
  const char* name = nullptr;
  const char* text = nullptr;
  try {
    const DriverApi& api = driver_api();
    api.cuGetErrorName(status, &name);
    api.cuGetErrorString(status, &text);
  } catch (const Error&) {
  }
  std::string message = name ? name : "CUresult";
  if (text) message += ": " + std::string(text);
  return message;
}

void fail_cuda(cudaError_t status, const char* call, const char* file, int line) {
  fail("CUDA runtime", status,
       std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status), call, file, line);
}
void fail_driver(CUresult status, const char* call, const char* file, int line) {
  fail("CUDA driver", status, driver_message(status), call, file, line);
}
void fail_cupti(CUptiResult status, const char* call, const char* file, int line) {
  fail("CUPTI", status, cupti_message(status), call, file, line);
}
std::string cudnn_message(cudnnStatus_t status) {
  char detail[1024] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string message = cudnnGetErrorString(status);
  if (detail[0]) message += ": " + std::string(detail);
  return message;
}

void fail_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  fail("cuDNN", status, cudnn_message(status), call, file, line);
}
void fail_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  fail("cuBLAS", status, cublasGetStatusString(status), call, file, line);
}

void warn(const char* library, int status, const char* message, const char* call, const char* file,
          int line) noexcept {
  std::fprintf(stderr, "timeroof: warning: %s error %d (%s) in %s at %s:%d\n", library, status,
               message ? message : "", call, file, line);
}

}  // namespace timeroof::check_detail
