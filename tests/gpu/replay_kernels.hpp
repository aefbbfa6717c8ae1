// Test kernels whose work depends on their own data, to show what replay does.
#pragma once

#include <cuda_runtime_api.h>

namespace timeroof::test {

// Each of blocks x threads threads runs `iterations` x 2 FFMA only while its
// counter is 0, then increments the counter: the first call does the work, a
// second call without a restore does none.
void launch_consume_once(unsigned* counters, int blocks, int threads, int iterations,
                         cudaStream_t stream);

}  // namespace timeroof::test
