// Host<->device transfer ceilings: h2d_pinned, d2h_pinned, h2d_pageable,
// d2h_pageable; one copy of 256 MiB per sample (64 MiB quick); bytes per second.
//
// Pinned copies are timed as nvbandwidth times them: a one-thread kernel spins on
// a flag in page-locked host memory and holds the stream; the start event, the
// copy and the stop event are queued behind it; then the host sets the flag. The
// events therefore bracket the DMA alone, with none of the host's submission
// cost between them.
// Pageable copies cannot be held that way: the driver stages them through its own
// pinned buffer with the host thread, so cudaMemcpyAsync returns only when (D2H)
// or shortly before (H2D) the data has moved, and a copy queued behind a spinning
// kernel would block the very thread that must release it. They are timed with the
// host clock around cudaMemcpyAsync + cudaStreamSynchronize (PageableCopies): what
// a framework's pageable copy costs, API overhead (~10 us of ~10 ms) included.
// They drift with the host as the launch roofs do (h2d_pageable -23% and +15.9%
// between two runs on an H100, issue 15), so HostWindows (launch_ceilings.cpp)
// samples them in windows spread over the ceilings run, with buffers of their own
// in each window.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/ceiling_names.hpp"
#include "core/elapsed.hpp"
#include "core/format.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "kernels/ceiling_support.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/transfer.hpp"

namespace timeroof {

namespace {

using ceiling_support::concat;

constexpr std::size_t kMiB = std::size_t{1} << 20;
// The spin kernel gives up after this many SM clocks (~2-4 s): only a safety net.
constexpr long long kSpinTimeoutCycles = 4'000'000'000LL;

// The flag and the time-out marker, in page-locked host memory the GPU reads.
class HostFlag {
 public:
  HostFlag() : memory_(2) {
    memory_.get()[0] = 0;
    memory_.get()[1] = 0;
    void* device = nullptr;
    TR_CUDA_CHECK(cudaHostGetDevicePointer(&device, memory_.get(), 0));
    device_ = static_cast<int*>(device);
  }
  // Releases a spinning kernel even when a copy throws, so no kernel is left spinning.
  ~HostFlag() { release(); }
  HostFlag(const HostFlag&) = delete;
  HostFlag& operator=(const HostFlag&) = delete;

  void arm() { store(0); }
  void release() { store(1); }
  const volatile int* device_flag() const { return device_; }
  int* device_timed_out() const { return device_ + 1; }
  bool timed_out() const { return load(1) != 0; }

 private:
  void store(int value) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    static_cast<volatile int*>(memory_.get())[0] = value;
  }
  int load(int index) const { return static_cast<volatile int*>(memory_.get())[index]; }

  PinnedBuffer<int> memory_;
  int* device_ = nullptr;
};

// The harness's round loop (measure_until_stable) around one held copy per sample.
Measurement measure_held_copy(const TimingPolicy& policy, int device, cudaStream_t stream,
                              HostFlag& flag, const std::function<void(cudaStream_t)>& copy) {
  for (int i = 0; i < policy.warmup; ++i) copy(stream);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  const Event start, stop;
  const ClockReader clock_reader(device);
  return measure_until_stable(
      policy, [&](int n, std::vector<double>& samples, std::vector<Clocks>& clocks) {
        for (int i = 0; i < n; ++i) {
          flag.arm();
          launch_spin_until_flag(flag.device_flag(), flag.device_timed_out(), kSpinTimeoutCycles,
                                 stream);
          start.record(stream);
          copy(stream);
          stop.record(stream);
          flag.release();
          if (i == 0) clocks.push_back(clock_reader.read());  // the copy is running now
          stop.synchronize();
          samples.push_back(stop.seconds_since(start));
        }
      });
}

}  // namespace

std::size_t PageableCopies::bytes_for(bool quick) {
  return (quick ? 64 : 256) * kMiB;
}

PageableCopies::PageableCopies(const CeilingRequest& request)
    : bytes_(bytes_for(request.quick)),
      stream_(request.stream),
      device_(bytes_),
      // new[] without value-initialisation, then a pattern, so every page is
      // touched before the first timed copy.
      host_(new std::uint8_t[bytes_]) {
  std::memset(host_.get(), 0xa5, bytes_);
  TR_CUDA_CHECK(cudaMemsetAsync(device_.get(), 0x5a, bytes_, stream_));
  TR_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

double PageableCopies::time_copy(TransferDirection direction) const {
  const bool h2d = direction == TransferDirection::h2d;
  const auto start = std::chrono::steady_clock::now();
  TR_CUDA_CHECK(cudaMemcpyAsync(h2d ? static_cast<void*>(device_.get()) : host_.get(),
                                h2d ? static_cast<const void*>(host_.get()) : device_.get(), bytes_,
                                h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, stream_));
  TR_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return seconds_since(start);
}

std::string PageableCopies::scheme(TransferDirection direction, bool quick) {
  return concat("cudaMemcpyAsync ", direction == TransferDirection::h2d ? "H2D" : "D2H", " of ",
                format_binary_bytes(static_cast<double>(bytes_for(quick))),
                " pageable (new[]) + cudaStreamSynchronize, timed with the host clock "
                "(pageable copies are synchronous for the host), per copy");
}

void measure_transfer_ceilings(const CeilingRequest& request, CeilingResults& out) {
  const bool want_h2d_pinned =
      request.wanted(ceiling::transfer(TransferDirection::h2d, HostMemory::pinned));
  const bool want_d2h_pinned =
      request.wanted(ceiling::transfer(TransferDirection::d2h, HostMemory::pinned));
  if (!want_h2d_pinned && !want_d2h_pinned) return;
  ceiling_support::select_device_and_count_sms(request);

  const std::size_t bytes = PageableCopies::bytes_for(request.quick);  // the same size
  const std::string size_text = format_binary_bytes(static_cast<double>(bytes));
  DeviceBuffer<std::uint8_t> device_buffer(bytes);
  TR_CUDA_CHECK(cudaMemsetAsync(device_buffer.get(), 0x5a, bytes, request.stream));
  const cudaStream_t stream = request.stream;

  PinnedBuffer<std::uint8_t> pinned(bytes);
  std::memset(pinned.get(), 0xa5, bytes);
  HostFlag flag;
  const auto method = [&](const char* direction, const Measurement& m) {
    return concat("cudaMemcpyAsync ", direction, " of ", size_text,
                  " page-locked (cudaMallocHost), held behind a spin kernel and timed with "
                  "events around the copy alone (nvbandwidth's method); median of ",
                  m.repeats, " copies", flag.timed_out() ? "; the spin kernel timed out" : "");
  };
  if (want_h2d_pinned) {
    const Measurement m =
        measure_held_copy(request.timing(), request.device, stream, flag, [&](cudaStream_t s) {
          TR_CUDA_CHECK(
              cudaMemcpyAsync(device_buffer.get(), pinned.get(), bytes, cudaMemcpyHostToDevice, s));
        });
    out.ceilings.push_back(make_ceiling(
        ceiling::transfer(TransferDirection::h2d, HostMemory::pinned), CeilingKind::bandwidth,
        "B/s", static_cast<double>(bytes), m, method("H2D", m)));
  }
  if (want_d2h_pinned) {
    const Measurement m =
        measure_held_copy(request.timing(), request.device, stream, flag, [&](cudaStream_t s) {
          TR_CUDA_CHECK(
              cudaMemcpyAsync(pinned.get(), device_buffer.get(), bytes, cudaMemcpyDeviceToHost, s));
        });
    out.ceilings.push_back(make_ceiling(
        ceiling::transfer(TransferDirection::d2h, HostMemory::pinned), CeilingKind::bandwidth,
        "B/s", static_cast<double>(bytes), m, method("D2H", m)));
  }
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace timeroof
