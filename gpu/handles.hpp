// Move-only RAII owners for CUDA runtime objects. Destructors never throw;
// a failed release is reported on stderr (TR_*_WARN).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "gpu/check.hpp"

namespace timeroof {

// Owns one handle of a C API; Release is a function object that frees it.
template <typename T, typename Release>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(T handle) : handle_(handle) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, T{})) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, T{});
    }
    return *this;
  }
  T get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != T{}; }
  void reset() noexcept {
    if (handle_ != T{}) Release{}(std::exchange(handle_, T{}));
  }

 private:
  T handle_{};
};

struct StreamRelease {
  void operator()(cudaStream_t s) const noexcept { TR_CUDA_WARN(cudaStreamDestroy(s)); }
};
struct EventRelease {
  void operator()(cudaEvent_t e) const noexcept { TR_CUDA_WARN(cudaEventDestroy(e)); }
};
struct GraphRelease {
  void operator()(cudaGraph_t g) const noexcept { TR_CUDA_WARN(cudaGraphDestroy(g)); }
};
struct GraphExecRelease {
  void operator()(cudaGraphExec_t g) const noexcept { TR_CUDA_WARN(cudaGraphExecDestroy(g)); }
};
struct DeviceMemoryRelease {
  void operator()(void* p) const noexcept { TR_CUDA_WARN(cudaFree(p)); }
};
struct PinnedMemoryRelease {
  void operator()(void* p) const noexcept { TR_CUDA_WARN(cudaFreeHost(p)); }
};

class Stream {
 public:
  Stream() {
    cudaStream_t s = nullptr;
    TR_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    handle_ = UniqueHandle<cudaStream_t, StreamRelease>(s);
  }
  cudaStream_t get() const noexcept { return handle_.get(); }
  void synchronize() const { TR_CUDA_CHECK(cudaStreamSynchronize(get())); }

 private:
  UniqueHandle<cudaStream_t, StreamRelease> handle_;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) {
    cudaEvent_t e = nullptr;
    TR_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
    handle_ = UniqueHandle<cudaEvent_t, EventRelease>(e);
  }
  cudaEvent_t get() const noexcept { return handle_.get(); }
  void record(cudaStream_t stream) const { TR_CUDA_CHECK(cudaEventRecord(get(), stream)); }
  void synchronize() const { TR_CUDA_CHECK(cudaEventSynchronize(get())); }
  // Seconds from `start` to this event; both must have completed.
  double seconds_since(const Event& start) const {
    float ms = 0;
    TR_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), get()));
    return ms * 1e-3;
  }

 private:
  UniqueHandle<cudaEvent_t, EventRelease> handle_;
};

// A captured CUDA graph (cudaStreamEndCapture's result) and its executable form.
using Graph = UniqueHandle<cudaGraph_t, GraphRelease>;
using GraphExec = UniqueHandle<cudaGraphExec_t, GraphExecRelease>;

// Device memory of `count` elements of T (uninitialised).
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    void* p = nullptr;
    if (count) TR_CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
    memory_ = UniqueHandle<void*, DeviceMemoryRelease>(p);
  }
  T* get() const noexcept { return static_cast<T*>(memory_.get()); }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }

 private:
  UniqueHandle<void*, DeviceMemoryRelease> memory_;
  std::size_t count_ = 0;
};

// Page-locked host memory of `count` elements of T.
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    void* p = nullptr;
    if (count) TR_CUDA_CHECK(cudaMallocHost(&p, count * sizeof(T)));
    memory_ = UniqueHandle<void*, PinnedMemoryRelease>(p);
  }
  T* get() const noexcept { return static_cast<T*>(memory_.get()); }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }

 private:
  UniqueHandle<void*, PinnedMemoryRelease> memory_;
  std::size_t count_ = 0;
};

}  // namespace timeroof
