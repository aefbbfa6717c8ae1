// Scaled dot-product attention through cuDNN's graph API, the library
// implementation of AttentionProblem (sweeps/attention_problem.hpp). prepare()
// builds the operation graph (sweeps/attention_graph.hpp), asks heuristic A
// (then the fallback list) for engine configurations, finalizes the first that
// cuDNN accepts into an execution plan, and binds buffers and workspace into a
// variant pack once; run() is one cudnnBackendExecute, capturable into a CUDA
// graph. The backward's inputs O and the statistics come from a forward graph
// with statistics run once in prepare(). fp8 (forward): Q, K, V, O in e4m3 with
// per-tensor scales (kAttentionFp8Scale); a backward with seq_kv not a multiple
// of 128 carries a padding mask at the full lengths (cuDNN 9.14 needs one).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/attention_problem.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/operator.hpp"

namespace timeroof {

// check() compares this many evenly spaced query rows (dQ, O) and key rows
// (dK, dV), the first and last included, of the first and last batch item and
// of the first and last head.
inline constexpr std::int64_t kAttentionCheckedRows = 8;

// fp8's check tolerance (normwise, max |O - O_ref| / max |O_ref|). The reference
// reads the same e4m3 Q, K, V the engine does, so what differs is the engine's
// two roundings to e4m3 (3 mantissa bits, each at most 2^-4 relative): P before
// P V, and O itself. O's rounding alone can reach 2^-4 of the largest output;
// P's adds a few per cent of a row's output (the rounding errors of many
// probabilities average out in P V). 2^-3 bounds both aligned; a wrong scale,
// mask or layout errs by far more (a factor-2 scale: 100%).
inline constexpr double kAttentionFp8Tolerance = 0.125;

// The first cuDNN (major * 10000 + minor * 100 + patch) whose fp8 attention
// timeroof has seen right on Hopper (sm_90). cuDNN 9.14's fp8 flash forward
// (eng2 kernel_cfg 32, and the other configurations it lists) writes wrong rows
// of O at random: on an H100, 16 of 48 checks at LLaMA prefill shapes failed in
// processes with no CUPTI in them, as often with the workspace zeroed or the
// device synchronized around each call; the same binary on cuDNN 9.19 passed 72
// of 72. Versions in between are untested, so refused. The backward is held to
// it too: its O and statistics come from the fp8 forward.
inline constexpr std::size_t kAttentionFp8HopperMinCudnn = 91900;

class AttentionState;

class Attention final : public Operator {
 public:
  explicit Attention(AttentionSpec spec, std::shared_ptr<LibraryHandles> libraries = nullptr);
  ~Attention() override;

  const AttentionProblem& problem() const override { return problem_; }
  // The plan's name (sweeps/cudnn_plan_name.hpp: "eng<N> <knob>=<value> ...").
  std::string algorithm() const override;
  // "workspace_bytes", "engine" (global index), "knobs", "heuristic" (the mode
  // that listed the plan) and "rank" in it, "configs_tried", "numerical_notes",
  // "behavior_notes", "layout" (bshd), "graph_operations", "scale", for bwd
  // "forward_plan" (the plan that made O and the statistics), for fp8 "fp8" (the
  // scales and descales, amax_s and amax_o of prepare()'s call), and with the
  // padding mask "padding_mask" (the lengths, the 128-key tile and the masked
  // keys of the last tile: work the counters show beyond the analytic FLOPs).
  nlohmann::json details() const override;
  std::vector<DeviceTensor> inputs() const override;
  std::vector<DeviceTensor> outputs() const override;

  void prepare(cudaStream_t stream) override;
  void run(cudaStream_t stream) override;
  // Sampled rows (kAttentionCheckedRows) against the host reference in double
  // (sweeps/attention_reference.hpp): O for fwd; dQ, dK and dV for bwd, each
  // judged normwise (relative_tolerance of fp16 / bf16, kAttentionFp8Tolerance
  // for fp8, whose O the reference reads dequantised) and the largest reported.
  CheckResult check() override;

  const AttentionSpec& spec() const noexcept { return problem_.spec(); }

 private:
  void* buffer(const std::string& role) const;

  AttentionProblem problem_;
  std::shared_ptr<LibraryHandles> libraries_;
  std::unique_ptr<AttentionState> state_;
};

}  // namespace timeroof
