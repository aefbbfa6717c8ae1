#include "gpu/check_cublas.hpp"

#include <string>

namespace timeroof::check_detail {

void fail_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  fail("cuBLAS", status, cublasGetStatusString(status), call, file, line);
}

}  // namespace timeroof::check_detail
