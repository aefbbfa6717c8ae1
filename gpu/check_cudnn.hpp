// The cuDNN check helper (gpu/check.hpp says how the helpers behave): only
// the files that call cuDNN include it, so the rest compile without its headers.
#pragma once

#include <cudnn.h>

#include <string>

#include "gpu/check.hpp"

namespace timeroof::check_detail {
// Wrappers that know a better call text and their caller's location (the cuDNN
// graph layer, sweeps/cudnn_graph.cpp) call fail_cudnn directly.
[[noreturn]] void fail_cudnn(cudnnStatus_t status, const char* call, const char* file, int line);
// cudnnGetErrorString, then cudnnGetLastErrorString's detail (the graph API's
// only explanation of why a descriptor did not finalize), read once.
std::string cudnn_message(cudnnStatus_t status);
}  // namespace timeroof::check_detail

#define TR_CUDNN_CHECK(call)                                                       \
  do {                                                                             \
    const cudnnStatus_t tr_status_ = (call);                                       \
    if (tr_status_ != CUDNN_STATUS_SUCCESS)                                        \
      ::timeroof::check_detail::fail_cudnn(tr_status_, #call, __FILE__, __LINE__); \
  } while (0)
#define TR_CUDNN_WARN(call)                                                                       \
  do {                                                                                            \
    const cudnnStatus_t tr_status_ = (call);                                                      \
    if (tr_status_ != CUDNN_STATUS_SUCCESS)                                                       \
      ::timeroof::check_detail::warn("cuDNN", tr_status_,                                         \
                                     ::timeroof::check_detail::cudnn_message(tr_status_).c_str(), \
                                     #call, __FILE__, __LINE__);                                  \
  } while (0)
