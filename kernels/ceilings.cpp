#include "kernels/ceilings.hpp"

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/ceiling_names.hpp"
#include "core/error.hpp"
#include "core/file_lock.hpp"

namespace timeroof {

namespace {
using Measure = void (*)(const CeilingRequest&, CeilingResults&);

// The function that measures each of core's ceiling families (ceiling::families()).
Measure measure_of(const ceiling::Family& family) {
  static const std::map<std::string, Measure> table = {
      // The launch family's host-timed roofs are LaunchWindows, taken by measure_ceilings.
      {"launch", measure_launch_graph_ceiling}, {"transfer", measure_transfer_ceilings},
      {"memory", measure_memory_ceilings},      {"cuda_core", measure_cuda_core_ceilings},
      {"tensor", measure_tensor_ceilings},      {"library", measure_library_ceilings},
  };
  const auto found = table.find(family.name);
  if (found == table.end())
    throw Error(ExitCode::usage,
                std::string("no kernels measure the ceiling family ") + family.name);
  return found->second;
}

// The windowed launch roofs' family, whose first window is taken at its own turn.
constexpr char kWindowedFamily[] = "launch";

void take_window(LaunchWindows& windows, const CeilingRequest& request) {
  try {
    const FileLock turn(request.host_lock);
    windows.take(request);
  } catch (const Error& error) {  // the lock
    windows.fail(error.what());
  }
}
}  // namespace

const std::vector<std::string>& known_ceiling_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const ceiling::Family& family : ceiling::families())
      all.insert(all.end(), family.names.begin(), family.names.end());
    return all;
  }();
  return names;
}

std::size_t ceiling_family_count() {
  return ceiling::families().size();
}

CeilingResults measure_ceilings(const CeilingRequest& request) {
  CeilingResults results;
  std::vector<const ceiling::Family*> running;
  std::vector<std::string> running_names;
  for (const ceiling::Family& family : ceiling::families()) {
    bool any_wanted = false;
    for (const std::string& name : family.names) any_wanted = any_wanted || request.wanted(name);
    if (!any_wanted) continue;
    running.push_back(&family);
    running_names.push_back(family.name);
  }
  LaunchWindows launch_windows(request);
  const std::vector<int> windows_after =
      windows_after_each(running_names, kWindowedFamily, kLaunchWindows);
  std::size_t launch_roofs_at = 0;  // where the joined roofs go: the family order is kept
  for (std::size_t i = 0; i < running.size(); ++i) {
    const ceiling::Family& family = *running[i];
    request.progress(family.name);
    const bool windowed = family.name == std::string_view(kWindowedFamily);
    int windows_due = windows_after[i];
    // The first window at its family's turn, before the family's other roofs.
    if (windowed && windows_due > 0) {
      take_window(launch_windows, request);
      --windows_due;
      launch_roofs_at = results.ceilings.size();
    }
    try {
      const FileLock turn(family.uses_host ? request.host_lock : std::string());
      measure_of(family)(request, results);
    } catch (const Error& error) {
      for (const std::string& name : family.names) {
        if (request.wanted(name) && !launch_windows.measures(name))
          results.skipped.push_back(
              {name, std::string(family.name) + " roofs failed: " + error.what(), true});
      }
    }
    for (int w = 0; w < windows_due; ++w) take_window(launch_windows, request);
  }
  CeilingResults joined;
  launch_windows.finish(joined, window_spacing_note(windows_after, request.quick));
  results.ceilings.insert(results.ceilings.begin() + static_cast<std::ptrdiff_t>(launch_roofs_at),
                          joined.ceilings.begin(), joined.ceilings.end());
  results.skipped.insert(results.skipped.end(), joined.skipped.begin(), joined.skipped.end());
  return results;
}

}  // namespace timeroof
