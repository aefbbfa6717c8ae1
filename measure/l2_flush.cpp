#include "measure/l2_flush.hpp"

#include "kernels/memory.hpp"

namespace timeroof {

L2Flusher::L2Flusher(std::int64_t l2_bytes)
    : buffer_(2 * static_cast<std::size_t>(l2_bytes) / sizeof(uint4)) {
  const HbmVariant& read = hbm_read_variants().front();
  sums_ =
      DeviceBuffer<std::uint32_t>(static_cast<std::size_t>(hbm_blocks_for(read, buffer_.size())));
  fill_pattern(buffer_.get(), buffer_.size(), 11, nullptr);
  TR_CUDA_CHECK(cudaDeviceSynchronize());
}

void L2Flusher::flush(cudaStream_t stream) const {
  const HbmVariant& read = hbm_read_variants().front();
  launch_hbm_read(read, buffer_.get(), buffer_.size(), sums_.get(),
                  hbm_blocks_for(read, buffer_.size()), stream);
}

}  // namespace timeroof
