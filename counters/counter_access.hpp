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

}  // namespace timeroof
