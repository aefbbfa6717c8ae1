// Decoding of CUPTI activity records into the typed records of activity_tracer.hpp,
// shared by ActivityTracer and the injection library of `timeroof profile`
// (inject/), so one copy knows CUPTI's record layouts and names.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>

#include "counters/activity_tracer.hpp"
#include "counters/launch_names.hpp"

namespace timeroof {

// One decoded record; std::monostate for kinds these structs do not cover
// (NVTX markers and the like, which the caller may read itself).
using DecodedActivity = std::variant<std::monostate, KernelActivity, MemcpyActivity, MemsetActivity,
                                     ApiActivity, SyncActivity>;

// Keeps the demangled kernel names and the API names it has looked up: a trace
// repeats a few names many times, and demangling is the costly part.
class ActivityDecoder {
 public:
  // Kernel records take the name launched under their correlation id from
  // `launches` (taken out of it) where there is one; nullptr: CUPTI's names.
  void name_kernels_from(LaunchNames* launches) noexcept { launches_ = launches; }
  DecodedActivity decode(const CUpti_Activity* record);
  // cuptiGetCallbackName, runtime names without their version suffix.
  const std::string& api_name(ApiDomain domain, std::uint32_t cbid);
  const std::string& demangled(const char* raw_name);

 private:
  LaunchNames* launches_ = nullptr;
  std::unordered_map<std::string, std::string> demangled_;          // raw kernel name -> demangled
  std::map<std::pair<int, std::uint32_t>, std::string> api_names_;  // (domain, cbid) -> name
};

// CUPTI's copy kind as the trace spells it: "HtoD", "DtoH", "DtoD", "HtoH",
// "PtoP" (arrays count as device memory); "other" for the rest.
const char* copy_kind_name(std::uint32_t cupti_copy_kind);

}  // namespace timeroof
