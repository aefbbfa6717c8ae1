// The roofs the model divides by, taken from a run's Machine (core/results.hpp).
//
// Definitions (docs/design.md, "The model"):
// - P_p, peak FLOP/s of precision class p: the best *measured* ceiling among the
//   variants of that class (Tensor Cores: the wgmma kernel `tensor_<type>`, the
//   mma.sync kernel `tensor_<type>_mma_sync`, the library GEMM `cublaslt_<type>` /
//   `cublas_fp64`; CUDA cores: the FMA kernel, `fp16_fma` or `bf16_fma` for the
//   shared half class). FMA is the fastest CUDA-core instruction, so its rate is
//   the roof; add/mul-only code runs at half of it and shows as lost time.
// - B_l, bandwidth of memory level l: HBM (DRAM) the best of `hbm_read` and
//   `hbm_copy` (copy counts read + write bytes per second), L2 `l2_read`, L1
//   `l1_read`.
// - L, launch cost: `launch_async` (seconds per kernel launch issued back to back).
// - B_h2d, B_d2h per host memory: `h2d_pinned`, `d2h_pinned` for page-locked host
//   memory, `h2d_pageable`, `d2h_pageable` for ordinary (pageable) host memory,
//   whose copies are staged through a driver buffer and run several times slower
//   (H200: 55 GB/s pinned, 11 / 18 GB/s pageable). A point's transfers are bounded
//   by the pair of its own host memory (bounds.hpp), never by the other pair.
// - B_net, the node's interconnect (runs of `--devices`): the best measured GPU
//   to GPU bandwidth, of the P2P copies (`p2p_ce_<a>to<b>`, `p2p_sm_<a>to<b>`)
//   and the NCCL all-reduce bus bandwidth (`allreduce_nccl`). Drawn as the third
//   roof beside compute and memory; no operator of a sweep moves data between
//   GPUs yet, so no point is judged against it.
// Missing inputs: a roof with no measured variant (absent, or measured <= 0)
// falls back to the best *theoretical* value of its variants (CUPTI
// `.peak_sustained` x clock, filled by counters/theoretical_peaks) and says so
// (source = theoretical); with neither it is absent (value = nullopt) with a
// reason, which names the machine's CeilingSkip reason where there is one.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "core/vocabulary.hpp"

namespace timeroof::roofline {

// The precision classes (PrecisionClass), memory levels (Level), host memories
// (HostMemory) and copy directions (TransferDirection) the roofs are indexed by
// are core's (core/vocabulary.hpp).

enum class RoofSource { measured, theoretical, absent };
const char* to_string(RoofSource source);

// One roof: its value (FLOP/s, B/s or s), where it came from and why.
struct Roof {
  std::optional<double> value;  // nullopt: absent
  RoofSource source = RoofSource::absent;
  std::string ceiling;  // the Ceiling whose number was used, e.g. "tensor_fp16_mma_sync"
  std::string note;     // which variants were compared, or why it is theoretical/absent
  bool available() const noexcept { return value.has_value(); }
};

struct MachineRoofs {
  std::array<Roof, kPrecisionClassCount> compute;  // P_p, FLOP/s (op/s for int8)
  std::array<Roof, kLevelCount> memory;            // B_l, B/s
  Roof launch;                                     // L, s per launch
  // B_h2d, B_d2h, B/s: [direction][host memory].
  std::array<std::array<Roof, kHostMemoryCount>, kTransferDirectionCount> transfers;
  Roof interconnect;  // B_net, B/s
  const Roof& peak(PrecisionClass p) const { return compute[static_cast<std::size_t>(p)]; }
  const Roof& bandwidth(Level l) const { return memory[static_cast<std::size_t>(l)]; }
  const Roof& transfer(TransferDirection d, HostMemory h) const {
    return transfers[static_cast<std::size_t>(d)][static_cast<std::size_t>(h)];
  }
};

// The Ceiling names compared for a roof, best measured wins (listed for reports).
std::vector<std::string> compute_variants(PrecisionClass precision);
std::vector<std::string> memory_variants(Level level);

// Picks every roof of the model from `machine` (see the header comment).
MachineRoofs machine_roofs(const Machine& machine);

}  // namespace timeroof::roofline
