// Test kernels for the timing strategies: work of a chosen length on the GPU, and
// launches that cost the host more than the GPU.
#pragma once

#include <cuda_runtime_api.h>

namespace timeroof::test {

// One block that spins for about `nanoseconds` of GPU time (globaltimer).
void launch_spin(long long nanoseconds, cudaStream_t stream);
// One empty kernel of one warp.
void launch_empty(cudaStream_t stream);

}  // namespace timeroof::test
