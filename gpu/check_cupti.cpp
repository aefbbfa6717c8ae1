#include "gpu/check_cupti.hpp"

#include <string>

namespace timeroof::check_detail {

std::string cupti_message(CUptiResult status) {
  const char* text = nullptr;
  if (cuptiGetErrorMessage(status, &text) == CUPTI_SUCCESS && text) return text;
  if (cuptiGetResultString(status, &text) == CUPTI_SUCCESS && text) return text;
  return "unknown CUPTI error";
}

void fail_cupti(CUptiResult status, const char* call, const char* file, int line) {
  fail("CUPTI", status, cupti_message(status), call, file, line);
}

}  // namespace timeroof::check_detail
