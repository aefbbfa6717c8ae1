// The machine's roofs, measured by our own kernels. Each family returns the
// ceilings it measured (measured value, method, repeats, spread, clocks); the
// theoretical value is filled in afterwards from CUPTI peaks x observed clock.
// A roof the GPU cannot have (FP8 before sm_89, wgmma off Hopper) is left out
// and reported through `skipped`.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "core/vocabulary.hpp"
#include "gpu/handles.hpp"
#include "kernels/measure.hpp"
#include "kernels/time_windows.hpp"

namespace timeroof {

// The harness's policy for one roof: reduced repeats and time with --quick.
inline TimingPolicy ceiling_timing(bool quick) {
  TimingPolicy p;
  if (quick) {
    p.round = 5;
    p.max_repeats = 30;
    p.max_seconds = 0.3;
  }
  return p;
}

struct CeilingRequest {
  int device = 0;
  cudaStream_t stream = nullptr;
  bool quick = false;  // reduced sizes and repeats: the whole set in < 20 s
  GpuInfo gpu;         // SM count, L2 size, compute capability
  // Whether the roof of this name is wanted (from --only); families check it
  // before measuring so an unwanted roof costs nothing.
  std::function<bool(const std::string&)> wanted = [](const std::string&) { return true; };
  // A file whose lock (flock) the launch and transfer families hold while they
  // measure: workers measuring several GPUs at once take turns for the roofs
  // that share the host. Empty: no lock.
  std::string host_lock;
  // Seconds of back-to-back load after the burst measurement of each tensor
  // roof (the best kernel of each type) and of hbm_read / hbm_copy, for their
  // sustained figure; 0: none.
  double sustained_seconds = 0;
  // Profiles the one kernel `launch` enqueues under these CUPTI metrics and
  // returns their values in the order asked, or nothing where the counters
  // cannot be read. Set by measure/ (kernels/ does not link CUPTI); the L2 read
  // roof explains its distance to the L2 slices' peak with it. Unset: no counters.
  using Profile = std::function<std::vector<double>(
      const std::vector<std::string>& metrics, const std::function<void(cudaStream_t)>& launch)>;
  Profile profile;
  // How many windows the host-timed roofs are measured in (HostWindows), each
  // with that share of one window's old sampling budget.
  int host_windows = kHostWindows;
  // Takes one window of the named host-timed roofs in a process of its own (the
  // CLI's device worker running host_window_document) and returns that document;
  // throws an Error naming why not. Unset: windows in this process. The host
  // gives each process one of its modes (H200: launch_async ~3.5 or ~4.4 us per
  // process, whatever the core or stream), so windows in fresh processes let the
  // roof be the best the host reaches (WindowedRoof::windows_in_processes).
  // `windows`: how many windows the roof is measured in (host_windows), each
  // window sampled with that share of the budget.
  using ProcessWindow =
      std::function<nlohmann::json(const std::vector<std::string>& roofs, int windows)>;
  ProcessWindow process_window;
  // Called with a family's name ("memory") before it is measured.
  std::function<void(const std::string&)> progress = [](const std::string&) {};
  TimingPolicy timing() const { return ceiling_timing(quick); }
};

struct CeilingResults {
  std::vector<Ceiling> ceilings;
  std::vector<CeilingSkip> skipped;
  std::vector<WorkingSetSample> working_set;  // filled by the memory family
};

// CUDA-core FMA and add/mul roofs: fp64_fma, fp32_fma, fp16_fma (packed HFMA2),
// bf16_fma (packed), fp64_addmul, fp32_addmul, fp16_addmul, bf16_addmul.
void measure_cuda_core_ceilings(const CeilingRequest& request, CeilingResults& out);
// hbm_read, hbm_write, hbm_copy, l2_read, l1_read, shared_read, and the working-set sweep.
void measure_memory_ceilings(const CeilingRequest& request, CeilingResults& out);
// h2d_pinned, d2h_pinned (nvbandwidth-style spin kernel). The pageable copies
// are host-timed and measured in HostWindows.
void measure_transfer_ceilings(const CeilingRequest& request, CeilingResults& out);
// The host-timed roofs alone (HostWindows, kHostWindows windows one after another),
// then launch_graph_node. measure_ceilings spreads the windows over the whole run
// instead.
void measure_host_timed_ceilings(const CeilingRequest& request, CeilingResults& out);
// launch_graph_node: GPU-timed, so one window (it repeated within 0.7% across runs).
void measure_launch_graph_ceiling(const CeilingRequest& request, CeilingResults& out);

// Windows of the host-timed roofs in processes of their own: 5, so that the
// host's faster mode is among them (H200: ~44% of processes; 5 miss it 5% of the time).
inline constexpr int kHostProcessWindows = 5;

// One window of every host-timed roof the request wants, taken in this process,
// as the document a parent's HostWindows reads back (CeilingRequest::process_window):
// {"roofs": [{"name", "window": window_json or null, "failure": why, where null}]}.
nlohmann::json host_window_document(const CeilingRequest& request);

// One window's pageable copies (kernels/transfer_ceilings.cpp): a device buffer
// and a pageable host buffer (new[], every page touched) of 256 MiB (64 MiB quick).
// Pageable copies cannot be held behind a spin kernel as the pinned ones are (the
// driver stages them through its own pinned buffer with the host thread), so they
// are timed with the host clock: what a framework's pageable copy costs.
class PageableCopies {
 public:
  explicit PageableCopies(const CeilingRequest& request);
  // Seconds of one cudaMemcpyAsync + cudaStreamSynchronize, host clock.
  double time_copy(TransferDirection direction) const;
  // The bytes of one copy.
  static std::size_t bytes_for(bool quick);
  // How one sample is taken, the start of the roof's method.
  static std::string scheme(TransferDirection direction, bool quick);

 private:
  std::size_t bytes_;
  cudaStream_t stream_;
  DeviceBuffer<std::uint8_t> device_;
  std::unique_ptr<std::uint8_t[]> host_;
};

// The host-timed roofs the request wants: launch_async, launch_sync (launch
// family), h2d_pageable, d2h_pageable (transfer family), one window at a time
// (kernels/time_windows.hpp says why), then joined. The caller holds the host
// lock around each take().
class HostWindows {
 public:
  explicit HostWindows(
      const CeilingRequest& request,
      std::chrono::steady_clock::time_point run_start = std::chrono::steady_clock::now());
  bool empty() const noexcept { return roofs_.empty(); }
  bool measures(const std::string& name) const;
  int taken() const noexcept { return taken_; }
  const std::vector<WindowedRoof>& roofs() const noexcept { return roofs_; }
  // One window of each roof, now: its own warm-up, buffers and pinned thread,
  // and a kHostWindows-th of the sampling one window had before. A CUDA error
  // fails this window only, for the roofs it had not sampled yet (the method
  // says so).
  void take(const CeilingRequest& request);
  // A window that could not be taken (e.g. the host lock failed).
  void fail(const std::string& reason);
  // The joined ceilings into out.ceilings, `spacing` ending their methods
  // (window_spacing_note); a roof without a window into out.skipped.
  void finish(CeilingResults& out, std::string_view spacing) const;

 private:
  void record_failure(double at_s, const std::string& reason);
  // take() through request.process_window.
  void take_in_process(const CeilingRequest& request, double at_s);
  std::chrono::steady_clock::time_point run_start_;
  std::vector<WindowedRoof> roofs_;
  int taken_ = 0;
};
// tensor_fp16, tensor_bf16, tensor_tf32, tensor_fp8, tensor_int8, tensor_fp64: the
// best path the GPU has (sm_90: the larger of wgmma and mma.sync; elsewhere
// mma.sync); on sm_90 also tensor_<type>_mma_sync, the legacy-path figure
// (kernels/tensor_mma.hpp: FLOP convention and kernel design).
void measure_tensor_ceilings(const CeilingRequest& request, CeilingResults& out);
// cublaslt_fp16, cublaslt_bf16, cublaslt_tf32, cublaslt_fp8, cublaslt_int8,
// cublas_fp64: the best large-GEMM rate of the library, for reference.
void measure_library_ceilings(const CeilingRequest& request, CeilingResults& out);

// Every roof name a family can produce, in measurement order (for --only):
// the names of core's ceiling::families().
const std::vector<std::string>& known_ceiling_names();
// How many families measure_ceilings runs at most (the progress line's "[i/n]").
std::size_t ceiling_family_count();

// Runs every family in order; a family that throws becomes skipped entries
// with the error, so one failing roof never loses the others.
CeilingResults measure_ceilings(const CeilingRequest& request);

}  // namespace timeroof
