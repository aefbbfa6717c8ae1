// Linux CPU lists ("0-15,32-47", as sysfs writes a PCI device's local_cpulist)
// and the process's CPU affinity. A --devices worker keeps to the CPUs local to
// its GPU, so its host work (launches, CUPTI's decoding, the timing loop) does
// not cross a socket or share cores with the other worker.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace timeroof {

// The CPUs of `text`, ascending and distinct; throws a usage error naming the
// part that is not "N" or "N-M" (M >= N).
std::vector<int> parse_cpu_list(std::string_view text);

// The shortest list form: {0,1,2,3,8} -> "0-3,8".
std::string format_cpu_list(const std::vector<int>& cpus);

// The CPUs this thread may run on.
std::vector<int> allowed_cpus();

// Keeps the calling thread (and the threads it starts later) to `cpus`; returns
// "" or why not (sched_setaffinity's error).
std::string keep_to_cpus(const std::vector<int>& cpus);

}  // namespace timeroof
