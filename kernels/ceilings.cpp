#include "kernels/ceilings.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
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
      // The host-timed roofs (launch_async, launch_sync, the pageable copies) are
      // HostWindows, taken by measure_ceilings.
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

void take_window(HostWindows& windows, const CeilingRequest& request) {
  try {
    const FileLock turn(request.host_lock);
    windows.take(request);
  } catch (const Error& error) {  // the lock
    windows.fail(error.what());
  }
}

// Where a roof stands in ceiling::families(): its family's place, then its own
// within the family (every roof measure_ceilings measures is named there).
std::pair<std::size_t, std::size_t> measurement_order(const std::string& name) {
  const std::vector<ceiling::Family>& families = ceiling::families();
  for (std::size_t f = 0; f < families.size(); ++f) {
    const std::vector<std::string>& names = families[f].names;
    const auto at = std::find(names.begin(), names.end(), name);
    if (at != names.end()) return {f, static_cast<std::size_t>(at - names.begin())};
  }
  return {families.size(), 0};
}

// Puts a windowed roof where it would stand had it been measured at its family's
// turn: before the first roof after it in that order (the families ran in it).
void insert_in_measurement_order(std::vector<Ceiling>& ceilings, Ceiling ceiling) {
  const auto order = measurement_order(ceiling.name);
  const auto at = std::find_if(ceilings.begin(), ceilings.end(),
                               [&](const Ceiling& c) { return measurement_order(c.name) > order; });
  ceilings.insert(at, std::move(ceiling));
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
  HostWindows host_windows(request);
  std::string windowed_family;  // the first running family with a windowed roof
  for (const ceiling::Family& family : ceiling::families()) {
    bool any_wanted = false, any_windowed = false;
    for (const std::string& name : family.names) {
      any_wanted = any_wanted || request.wanted(name);
      any_windowed = any_windowed || host_windows.measures(name);
    }
    if (!any_wanted) continue;
    running.push_back(&family);
    running_names.push_back(family.name);
    if (any_windowed && windowed_family.empty()) windowed_family = family.name;
  }
  const std::vector<int> windows_after =
      windows_after_each(running_names, windowed_family, request.host_windows);
  for (std::size_t i = 0; i < running.size(); ++i) {
    const ceiling::Family& family = *running[i];
    request.progress(family.name);
    int windows_due = windows_after[i];
    // The first window at its family's turn, before the family's other roofs.
    if (family.name == windowed_family && windows_due > 0) {
      take_window(host_windows, request);
      --windows_due;
    }
    try {
      const FileLock turn(family.uses_host ? request.host_lock : std::string());
      measure_of(family)(request, results);
    } catch (const Error& error) {
      for (const std::string& name : family.names) {
        if (request.wanted(name) && !host_windows.measures(name))
          results.skipped.push_back(
              {name, std::string(family.name) + " roofs failed: " + error.what(), true});
      }
    }
    for (int w = 0; w < windows_due; ++w) take_window(host_windows, request);
  }
  CeilingResults joined;
  host_windows.finish(joined, window_spacing_note(windows_after, request.quick));
  for (Ceiling& ceiling : joined.ceilings)
    insert_in_measurement_order(results.ceilings, std::move(ceiling));
  results.skipped.insert(results.skipped.end(), joined.skipped.begin(), joined.skipped.end());
  return results;
}

}  // namespace timeroof
