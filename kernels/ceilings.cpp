#include "kernels/ceilings.hpp"

#include <utility>

#include "core/error.hpp"
#include "core/file_lock.hpp"

namespace timeroof {

namespace {
using Family = void (*)(const CeilingRequest&, CeilingResults&);

struct FamilyEntry {
  const char* what;
  Family measure;
  std::vector<std::string> names;
  bool uses_host = false;  // host-side timing or host memory: one GPU at a time
};

// Cheap, latency-sensitive roofs first, while the GPU is cool; the heavy
// compute and library roofs last.
const std::vector<FamilyEntry>& families() {
  static const std::vector<FamilyEntry> table = {
      {"launch",
       measure_launch_ceilings,
       {"launch_async", "launch_sync", "launch_graph_node"},
       true},
      {"transfer",
       measure_transfer_ceilings,
       {"h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable"},
       true},
      {"memory",
       measure_memory_ceilings,
       {"hbm_read", "hbm_write", "hbm_copy", "l2_read", "l1_read", "shared_read", "working_set"}},
      {"cuda_core",
       measure_cuda_core_ceilings,
       {"fp64_fma", "fp32_fma", "fp16_fma", "bf16_fma", "fp64_addmul", "fp32_addmul", "fp16_addmul",
        "bf16_addmul"}},
      {"tensor",
       measure_tensor_ceilings,
       {"tensor_fp16", "tensor_bf16", "tensor_tf32", "tensor_fp8", "tensor_int8", "tensor_fp64",
        "tensor_fp16_mma_sync", "tensor_bf16_mma_sync", "tensor_tf32_mma_sync",
        "tensor_fp8_mma_sync", "tensor_int8_mma_sync"}},
      {"library",
       measure_library_ceilings,
       {"cublaslt_fp16", "cublaslt_bf16", "cublaslt_tf32", "cublaslt_fp8", "cublaslt_int8",
        "cublas_fp64"}},
  };
  return table;
}
}  // namespace

const std::vector<std::string>& known_ceiling_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const FamilyEntry& family : families())
      all.insert(all.end(), family.names.begin(), family.names.end());
    return all;
  }();
  return names;
}

CeilingResults measure_ceilings(const CeilingRequest& request) {
  CeilingResults results;
  for (const FamilyEntry& family : families()) {
    bool any_wanted = false;
    for (const std::string& name : family.names) any_wanted = any_wanted || request.wanted(name);
    if (!any_wanted) continue;
    request.progress(family.what);
    try {
      const FileLock turn(family.uses_host ? request.host_lock : std::string());
      family.measure(request, results);
    } catch (const Error& error) {
      for (const std::string& name : family.names) {
        if (request.wanted(name))
          results.skipped.push_back(
              {name, std::string(family.what) + " roofs failed: " + error.what(), true});
      }
    }
  }
  return results;
}

}  // namespace timeroof
