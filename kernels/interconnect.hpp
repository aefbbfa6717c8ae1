// The node's interconnect roofs, as nvbandwidth and nccl-tests measure them:
// - p2p_ce_<a>to<b>: copy-engine bandwidth, cudaMemcpyPeerAsync of 256 MiB
//   (64 MiB quick) from GPU a's memory into GPU b's, issued on a's stream;
// - p2p_sm_<a>to<b>: SM copy bandwidth, a kernel on GPU a writing 16-byte
//   vectors into GPU b's memory (peer access), every SM busy;
// - p2p_latency_<a>to<b>: one thread on GPU a chasing pointers through GPU b's
//   memory (a full-period LCG chain over 256 MiB in 4 KiB steps, so neither
//   cache nor TLB reach helps), seconds per dependent load;
// - allreduce_nccl: NCCL's all-reduce bus bandwidth over every GPU of the list,
//   one process and communicator per GPU (ncclCommInitAll), fp32 sum, the best
//   of 32 MiB..1 GiB; busbw = bytes x 2(n-1)/n / time, as nccl-tests reports it.
//   NCCL is loaded at run time (dlopen, as optional as NVML): libnccl.so.2 on the
//   library path, TIMEROOF_NCCL_LIBRARY, or the one pip's nvidia-nccl package
//   installs; without it the roof is skipped with where it was looked for.
//   NVLink multicast (NVLS) is whatever NCCL_NVLS_ENABLE says; the method records it.
// Pairs without peer access (cudaDeviceCanAccessPeer 0) are skipped with the reason.
#pragma once

#include <string>
#include <vector>

#include "kernels/ceilings.hpp"

namespace timeroof {

// The interconnect roofs between `devices` (distinct indices, two or more).
CeilingResults measure_interconnect_ceilings(const std::vector<int>& devices, bool quick);

// Names --only accepts for them (each selects the whole interconnect set).
const std::vector<std::string>& interconnect_ceiling_names();

// Device side (kernels/interconnect.cu), launched on the current device.
// Copies `count` 16-byte vectors from src to dst (either may be a peer's memory).
void launch_vector_copy(const void* src, void* dst, std::size_t count, int blocks,
                        cudaStream_t stream);
// Writes a pointer chain into `chain` (node i at word i x stride_words, `nodes`
// nodes, a power of two): node i points to node (i x 5 + 1) mod nodes, in words.
void launch_chain_init(unsigned* chain, unsigned nodes, unsigned stride_words, cudaStream_t stream);
// One thread follows `hops` links of `chain` from word 0 (loads bypass L1);
// the last index lands in *sink so the chase cannot be elided.
void launch_pointer_chase(const unsigned* chain, int hops, unsigned* sink, cudaStream_t stream);

}  // namespace timeroof
