// Whether this GPU's hardware counters can be read, established by reading
// them: the profiler is attached and a probe kernel with a known FFMA count is
// measured. When they cannot, the reason and the fix are precise.
#pragma once

#include "core/results.hpp"

namespace timeroof {

// Never throws for counter problems; they are the answer. The current device
// must have been selected (select_gpu).
CounterAccess probe_counter_access();

// The CUPTI chip name of the current device ("GH100"), or "" if CUPTI cannot say.
std::string current_chip_name(int device_index);

// query_gpu(device) with the CUPTI chip name and the counter probe's verdict: the
// GPU as `timeroof info` and every run record describe it. `device` must be the
// selected one.
GpuInfo inspect_gpu(int device);

}  // namespace timeroof
