// Where the libcupti.so this binary loaded lives: NVTX_INJECTION64_PATH for the
// programs `timeroof profile` runs (NVTX hands its ranges to CUPTI only there).
#include <cupti_activity.h>
#include <dlfcn.h>

#include <string>

namespace timeroof::cli {

std::string cupti_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) == 0 || !info.dli_fname)
    return {};
  return info.dli_fname;
}

}  // namespace timeroof::cli
