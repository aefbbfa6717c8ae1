// The CUPTI check helper (gpu/check.hpp says how the helpers behave): only
// the files that call CUPTI include it, so the rest compile without its headers.
#pragma once

#include <cupti_result.h>

#include <string>

#include "gpu/check.hpp"

namespace timeroof::check_detail {
[[noreturn]] void fail_cupti(CUptiResult status, const char* call, const char* file, int line);
std::string cupti_message(CUptiResult status);
}  // namespace timeroof::check_detail

#define TR_CUPTI_CHECK(call)                                                       \
  do {                                                                             \
    const CUptiResult tr_status_ = (call);                                         \
    if (tr_status_ != CUPTI_SUCCESS)                                               \
      ::timeroof::check_detail::fail_cupti(tr_status_, #call, __FILE__, __LINE__); \
  } while (0)
#define TR_CUPTI_WARN(call)                                                                       \
  do {                                                                                            \
    const CUptiResult tr_status_ = (call);                                                        \
    if (tr_status_ != CUPTI_SUCCESS)                                                              \
      ::timeroof::check_detail::warn("CUPTI", tr_status_,                                         \
                                     ::timeroof::check_detail::cupti_message(tr_status_).c_str(), \
                                     #call, __FILE__, __LINE__);                                  \
  } while (0)
