#include "inject/thread_cpu.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace timeroof::inject {
namespace {

constexpr double kOtherBelowSeconds = 0.01;

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", seconds);
  return text;
}

}  // namespace

std::optional<TaskStat> parse_task_stat(std::string_view line) {
  // "TID (NAME) STATE PPID ...": the name may hold spaces and parentheses, so it
  // ends at the last ')'; utime and stime are the 14th and 15th fields.
  const std::size_t open = line.find('(');
  const std::size_t close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  TaskStat stat;
  stat.name = std::string(line.substr(open + 1, close - open - 1));
  std::istringstream rest{std::string(line.substr(close + 1))};
  const std::vector<std::string> fields{std::istream_iterator<std::string>(rest),
                                        std::istream_iterator<std::string>()};
  constexpr std::size_t kUtime = 11;  // fields from the 3rd (state) on
  if (fields.size() <= kUtime + 1) return std::nullopt;
  for (const std::size_t i : {kUtime, kUtime + 1}) {
    std::uint64_t ticks = 0;
    const std::string& field = fields[i];
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), ticks);
    if (error != std::errc() || end != field.data() + field.size()) return std::nullopt;
    stat.cpu_ticks += ticks;
  }
  return stat;
}

std::vector<ThreadCpu> threads_cpu() {
  std::vector<ThreadCpu> threads;
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr || ticks_per_second <= 0) {
    if (tasks) closedir(tasks);
    return threads;
  }
  while (const dirent* entry = readdir(tasks)) {
    std::uint32_t thread_id = 0;
    const std::string_view id = entry->d_name;
    const auto [end, error] = std::from_chars(id.data(), id.data() + id.size(), thread_id);
    if (error != std::errc() || end != id.data() + id.size()) continue;  // "." and ".."
    std::ifstream file("/proc/self/task/" + std::string(id) + "/stat");
    std::string line;
    if (!std::getline(file, line)) continue;  // the thread ended meanwhile
    if (const auto stat = parse_task_stat(line))
      threads.push_back(
          {stat->name, thread_id,
           static_cast<double>(stat->cpu_ticks) / static_cast<double>(ticks_per_second)});
  }
  closedir(tasks);
  return threads;
}

std::string describe_threads_cpu(std::vector<ThreadCpu> threads, std::uint32_t main_thread) {
  std::sort(threads.begin(), threads.end(),
            [](const ThreadCpu& a, const ThreadCpu& b) { return a.seconds > b.seconds; });
  std::string text;
  std::size_t others = 0;
  double others_seconds = 0;
  for (const ThreadCpu& thread : threads) {
    if (thread.seconds < kOtherBelowSeconds && thread.thread_id != main_thread) {
      ++others;
      others_seconds += thread.seconds;
      continue;
    }
    text += (text.empty() ? "" : ", ") + thread.name +
            (thread.thread_id == main_thread ? " (main) " : " ") + seconds_text(thread.seconds);
  }
  if (others > 0)
    text += (text.empty() ? "" : ", ") + std::to_string(others) + " other" +
            (others == 1 ? " " : "s ") + seconds_text(others_seconds);
  return text;
}

}  // namespace timeroof::inject
