// Host<->device transfer helpers (plain host view of kernels/transfer.cu): the
// spin kernel that holds a stream while copies are queued behind it, as
// nvbandwidth does. The ceilings are measured in kernels/transfer_ceilings.cpp.
#pragma once

#include <cuda_runtime_api.h>

namespace timeroof {

// Launches one thread that spins until `*flag` (page-locked host memory, read
// through its device pointer) is non-zero, or until `timeout_cycles` SM clocks
// have passed, whichever comes first; the timeout only keeps a lost release from
// hanging the GPU. On timeout it writes 1 to `*timed_out` (also page-locked).
void launch_spin_until_flag(const volatile int* flag, int* timed_out, long long timeout_cycles,
                            cudaStream_t stream);

}  // namespace timeroof
