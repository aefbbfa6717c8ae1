// Scaled dot-product attention through cuDNN's graph API, the library
// implementation of AttentionProblem (sweeps/attention_problem.hpp). prepare()
// builds the operation graph (sweeps/attention_graph.hpp), asks heuristic A
// (then the fallback list) for engine configurations, finalizes the first that
// cuDNN accepts into an execution plan, and binds buffers and workspace into a
// variant pack once; run() is one cudnnBackendExecute, capturable into a CUDA
// graph. The backward's inputs O and the statistics come from a forward graph
// with statistics run once in prepare().
#pragma once

#include <cuda_runtime_api.h>

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
  // "behavior_notes", "layout" (bshd), "graph_operations", "scale", and for bwd
  // "forward_plan" (the plan that made O and the statistics).
  nlohmann::json details() const override;
  std::vector<DeviceTensor> inputs() const override;
  std::vector<DeviceTensor> outputs() const override;

  void prepare(cudaStream_t stream) override;
  void run(cudaStream_t stream) override;
  // Sampled rows (kAttentionCheckedRows) against the host reference in double
  // (sweeps/attention_reference.hpp): O for fwd; dQ, dK and dV for bwd, each
  // judged normwise (relative_tolerance of fp16 / bf16) and the largest reported.
  CheckResult check() override;

  const AttentionSpec& spec() const noexcept { return problem_.spec(); }

 private:
  void* buffer(const std::string& role) const;

  AttentionProblem problem_;
  std::shared_ptr<LibraryHandles> libraries_;
  std::unique_ptr<AttentionState> state_;
};

}  // namespace timeroof
