// Which CUDA libraries a profiled process loaded, and their versions (the
// provenance of a profile: core/trace_events.hpp, LoadedLibrary). Part of the
// injection library of `timeroof profile`.
#pragma once

#include <string>
#include <vector>

#include "core/trace_events.hpp"

namespace timeroof::inject {

// The CUDA driver and the CUDA libraries this process has loaded (cudart, cuBLAS,
// cuBLASLt, cuDNN, NCCL, CUPTI), each from the loader's list of loaded objects,
// with the version its own call reports. Loads nothing: a library the process did
// not load is not listed.
std::vector<LoadedLibrary> loaded_cuda_libraries();

// Writes `libraries` as DIR/libraries-<pid>.json (a JSON array). Throws
// timeroof::Error naming the file on failure.
void write_loaded_libraries(const std::string& directory,
                            const std::vector<LoadedLibrary>& libraries);

}  // namespace timeroof::inject
