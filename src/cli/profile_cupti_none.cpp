// The analysis-only build has no CUPTI (and no injection library to trace with).
#include <string>

namespace timeroof::cli {

std::string cupti_library_path() {
  return {};
}

}  // namespace timeroof::cli
