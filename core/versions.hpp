// Library version integers as text, one spelling for every layer (the GPU's
// provenance and the libraries a profiled program loaded).
#pragma once

#include <cstddef>
#include <string>

namespace timeroof {

// CUDA's driver and runtime versions: 1000 * major + 10 * minor ("13.0").
std::string cuda_version_text(int version);
// cuDNN 9's and NCCL's: 10000 * major + 100 * minor + patch ("9.19.0").
std::string major_minor_patch_text(std::size_t version);

}  // namespace timeroof
