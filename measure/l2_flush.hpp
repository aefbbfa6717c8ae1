// Cold-L2 measurements: reading twice the L2 size writes back whatever earlier
// work left dirty and evicts everything else, so the next kernel starts with no
// useful data in L2.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "gpu/handles.hpp"

namespace timeroof {

class L2Flusher {
 public:
  // `l2_bytes`: the GPU's L2 size (GpuInfo::l2_bytes).
  explicit L2Flusher(std::int64_t l2_bytes);
  void flush(cudaStream_t stream) const;               // enqueues one read of 2 x L2
  static constexpr std::size_t kernels_per_flush = 1;  // launches one flush() makes

 private:
  DeviceBuffer<uint4> buffer_;
  DeviceBuffer<std::uint32_t> sums_;
};

}  // namespace timeroof
