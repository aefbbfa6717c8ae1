// What the memory-bound families (pointwise, softmax, pool) share, host only:
// their precisions (stored type; arithmetic in fp32 in every implementation) and
// which implementation measures a point: the project's own CUDA kernels
// (sweeps/memory_bound_kernels.hpp) or cuDNN (graph API pointwise and resample
// operations, the legacy softmax).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/vocabulary.hpp"

namespace timeroof {

// fp32, fp16, bf16: the stored type of every tensor; the arithmetic is fp32.
inline constexpr Precision kMemoryBoundPrecisions[] = {Precision::fp32, Precision::fp16,
                                                       Precision::bf16};
std::vector<std::string> memory_bound_precision_names();
// Throws a usage error "<family>: precision = X ...; allowed: fp32, fp16, bf16".
Precision parse_memory_bound_precision(const std::string& family, std::string_view text);

enum class KernelSource { own, cudnn };
const char* to_string(KernelSource source);  // "own", "cudnn"
KernelSource parse_kernel_source(const std::string& family, std::string_view text);

}  // namespace timeroof
