// Where a traced process's CPU time went, thread by thread: the diagnostic
// TIMEROOF_PROFILE_CPU=1 (scripts/device/tracing_cost.py's "-cpu" suffix) reports it at
// exit, to place what tracing costs a host-bound program: the program's own threads,
// CUPTI's, or the injection library's writer. The device machines have no perf.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace timeroof::inject {

struct ThreadCpu {
  std::string name;  // as the thread named itself (comm), e.g. "python3", "tr-writer"
  std::uint32_t thread_id = 0;
  double seconds = 0;  // user and system
};

// One /proc/PID/task/TID/stat line: the thread's name, and its user plus system
// time in clock ticks; std::nullopt where the line is not one.
struct TaskStat {
  std::string name;
  std::uint64_t cpu_ticks = 0;
};
std::optional<TaskStat> parse_task_stat(std::string_view line);

// This process's threads, from /proc/self/task; empty where it cannot be read.
std::vector<ThreadCpu> threads_cpu();

// "python3 (main) 10.52 s, tr-writer 2.31 s, 4 others 0.03 s": by CPU time, most
// first; threads under 10 ms are summed as others.
std::string describe_threads_cpu(std::vector<ThreadCpu> threads, std::uint32_t main_thread);

}  // namespace timeroof::inject
