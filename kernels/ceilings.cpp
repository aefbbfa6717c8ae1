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

// Puts a windowed roof among its family's block [begin, end) of `ceilings` in the
// family's order of names, so a roof reads where it did when it was measured at
// its family's turn.
void insert_in_family_order(std::vector<Ceiling>& ceilings, std::size_t begin, std::size_t end,
                            Ceiling ceiling, const std::vector<std::string>& names) {
  const auto rank = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) - names.begin();
  };
  std::size_t at = begin;
  while (at < end && rank(ceilings[at].name) < rank(ceiling.name)) ++at;
  ceilings.insert(ceilings.begin() + static_cast<std::ptrdiff_t>(at), std::move(ceiling));
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
      windows_after_each(running_names, windowed_family, kHostWindows);
  // Each family's block of results.ceilings, for the windowed roofs joined at the end.
  std::vector<std::pair<std::size_t, std::size_t>> blocks;
  for (std::size_t i = 0; i < running.size(); ++i) {
    const ceiling::Family& family = *running[i];
    request.progress(family.name);
    int windows_due = windows_after[i];
    // The first window at its family's turn, before the family's other roofs.
    if (family.name == windowed_family && windows_due > 0) {
      take_window(host_windows, request);
      --windows_due;
    }
    const std::size_t begin = results.ceilings.size();
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
    blocks.emplace_back(begin, results.ceilings.size());
    for (int w = 0; w < windows_due; ++w) take_window(host_windows, request);
  }
  CeilingResults joined;
  host_windows.finish(joined, window_spacing_note(windows_after, request.quick));
  for (Ceiling& ceiling : joined.ceilings) {
    // A windowed roof is wanted, so its family ran.
    const auto owner = std::find_if(running.begin(), running.end(), [&](const auto* family) {
      return std::find(family->names.begin(), family->names.end(), ceiling.name) !=
             family->names.end();
    });
    const auto family = static_cast<std::size_t>(owner - running.begin());
    if (family == running.size()) continue;
    insert_in_family_order(results.ceilings, blocks[family].first, blocks[family].second,
                           std::move(ceiling), running[family]->names);
    ++blocks[family].second;  // this block grew, the later ones moved by one
    for (std::size_t later = family + 1; later < blocks.size(); ++later) {
      ++blocks[later].first;
      ++blocks[later].second;
    }
  }
  results.skipped.insert(results.skipped.end(), joined.skipped.begin(), joined.skipped.end());
  return results;
}

}  // namespace timeroof
