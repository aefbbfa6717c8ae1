#include "gpu/check_cudnn.hpp"

#include <string>

namespace timeroof::check_detail {

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

}  // namespace timeroof::check_detail
