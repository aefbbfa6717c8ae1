#include "kernels/ceilings.hpp"

#include <map>
#include <string>

#include "core/ceiling_names.hpp"
#include "core/error.hpp"
#include "core/file_lock.hpp"

namespace timeroof {

namespace {
using Measure = void (*)(const CeilingRequest&, CeilingResults&);

// The function that measures each of core's ceiling families (ceiling::families()).
Measure measure_of(const ceiling::Family& family) {
  static const std::map<std::string, Measure> table = {
      {"launch", measure_launch_ceilings}, {"transfer", measure_transfer_ceilings},
      {"memory", measure_memory_ceilings}, {"cuda_core", measure_cuda_core_ceilings},
      {"tensor", measure_tensor_ceilings}, {"library", measure_library_ceilings},
  };
  const auto found = table.find(family.name);
  if (found == table.end())
    throw Error(ExitCode::usage,
                std::string("no kernels measure the ceiling family ") + family.name);
  return found->second;
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
  for (const ceiling::Family& family : ceiling::families()) {
    bool any_wanted = false;
    for (const std::string& name : family.names) any_wanted = any_wanted || request.wanted(name);
    if (!any_wanted) continue;
    request.progress(family.name);
    try {
      const FileLock turn(family.uses_host ? request.host_lock : std::string());
      measure_of(family)(request, results);
    } catch (const Error& error) {
      for (const std::string& name : family.names) {
        if (request.wanted(name))
          results.skipped.push_back(
              {name, std::string(family.name) + " roofs failed: " + error.what(), true});
      }
    }
  }
  return results;
}

}  // namespace timeroof
