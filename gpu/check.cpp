#include "gpu/check.hpp"

#include <cstdio>
#include <string>

#include "gpu/driver.hpp"

namespace timeroof::check_detail {

[[noreturn]] void fail(const char* library, int status, const std::string& message,
                       const char* call, const char* file, int line) {
  throw GpuError(library, status,
                 std::string(library) + " error " + std::to_string(status) + " (" + message +
                     ") in " + call + " at " + file + ":" + std::to_string(line));
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

void warn(const char* library, int status, const char* message, const char* call, const char* file,
          int line) noexcept {
  std::fprintf(stderr, "timeroof: warning: %s error %d (%s) in %s at %s:%d\n", library, status,
               message ? message : "", call, file, line);
}

}  // namespace timeroof::check_detail
