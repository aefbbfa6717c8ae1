// The cuBLAS check helper (gpu/check.hpp says how the helpers behave): only
// the files that call cuBLAS include it, so the rest compile without its headers.
#pragma once

#include <cublas_api.h>

#include <string>

#include "gpu/check.hpp"

namespace timeroof::check_detail {
[[noreturn]] void fail_cublas(cublasStatus_t status, const char* call, const char* file, int line);
}  // namespace timeroof::check_detail

#define TR_CUBLAS_CHECK(call)                                                       \
  do {                                                                              \
    const cublasStatus_t tr_status_ = (call);                                       \
    if (tr_status_ != CUBLAS_STATUS_SUCCESS)                                        \
      ::timeroof::check_detail::fail_cublas(tr_status_, #call, __FILE__, __LINE__); \
  } while (0)
#define TR_CUBLAS_WARN(call)                                                                  \
  do {                                                                                        \
    const cublasStatus_t tr_status_ = (call);                                                 \
    if (tr_status_ != CUBLAS_STATUS_SUCCESS)                                                  \
      ::timeroof::check_detail::warn("cuBLAS", tr_status_, cublasGetStatusString(tr_status_), \
                                     #call, __FILE__, __LINE__);                              \
  } while (0)
