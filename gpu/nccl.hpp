// NCCL, loaded at run time (as optional as NVML): timeroof builds and runs
// without it; where it loads, the interconnect roofs include the all-reduce.
// Only the ABI subset the all-reduce roof needs, declared here (nccl.h is not
// part of the CUDA toolkit), stable across NCCL 2.x.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace timeroof {

class Nccl {
 public:
  // Tries TIMEROOF_NCCL_LIBRARY, libnccl.so.2 on the library path, then the
  // copies pip's nvidia-nccl packages install; loaded() says whether one loaded.
  Nccl();
  ~Nccl();
  Nccl(const Nccl&) = delete;
  Nccl& operator=(const Nccl&) = delete;

  bool loaded() const noexcept { return library_ != nullptr; }
  const std::string& why_not() const noexcept { return why_; }  // when not loaded
  const std::string& path() const noexcept { return path_; }    // when loaded
  std::string version() const;                                  // "2.27.7"

  // One communicator per device of this process (ncclCommInitAll), destroyed
  // with the object.
  class Communicators {
   public:
    Communicators(const Nccl& nccl, const std::vector<int>& devices);
    ~Communicators();
    Communicators(const Communicators&) = delete;
    Communicators& operator=(const Communicators&) = delete;
    // In-place fp32 sum all-reduce of `count` floats, one call per device in
    // one group, each on its device's stream.
    void all_reduce(const std::vector<float*>& buffers, std::size_t count,
                    const std::vector<cudaStream_t>& streams) const;

   private:
    const Nccl& nccl_;
    std::vector<int> devices_;
    std::vector<void*> comms_;
  };

 private:
  void check(int status, const char* call, const char* file, int line) const;
  void* library_ = nullptr;
  std::string why_;
  std::string path_;
};

}  // namespace timeroof
