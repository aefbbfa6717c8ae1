#include "sweeps/memory_bound.hpp"

#include "core/error.hpp"

namespace timeroof {

std::vector<std::string> memory_bound_precision_names() {
  std::vector<std::string> names;
  for (Precision p : kMemoryBoundPrecisions) names.emplace_back(to_string(p));
  return names;
}

Precision parse_memory_bound_precision(const std::string& family, std::string_view text) {
  for (Precision p : kMemoryBoundPrecisions)
    if (text == to_string(p)) return p;
  throw usage_error(family + ": precision = " + std::string(text) +
                    " is not a stored type of this family; allowed: fp32, fp16, bf16");
}

const char* to_string(KernelSource source) {
  return source == KernelSource::own ? "own" : "cudnn";
}

KernelSource parse_kernel_source(const std::string& family, std::string_view text) {
  if (text == "own") return KernelSource::own;
  if (text == "cudnn") return KernelSource::cudnn;
  throw usage_error(family + ": implementation = " + std::string(text) +
                    " is not known; allowed: own (the project's CUDA kernels), cudnn");
}

}  // namespace timeroof
