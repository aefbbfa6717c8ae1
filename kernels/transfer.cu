// The stream-holding spin kernel of the transfer ceilings (see transfer.hpp).
#include "gpu/check.hpp"
#include "kernels/transfer.hpp"

namespace timeroof {

namespace {

__global__ void spin_until_flag_kernel(const volatile int* flag, int* timed_out,
                                       long long timeout_cycles) {
  const long long start = clock64();
  while (*flag == 0) {  // volatile: every iteration reads host memory again
    if (clock64() - start > timeout_cycles) {
      *timed_out = 1;
      return;
    }
    __nanosleep(256);  // fewer PCIe reads while waiting; release is seen within ~1 us
  }
}

}  // namespace

void launch_spin_until_flag(const volatile int* flag, int* timed_out, long long timeout_cycles,
                            cudaStream_t stream) {
  spin_until_flag_kernel<<<1, 1, 0, stream>>>(flag, timed_out, timeout_cycles);
  TR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace timeroof
