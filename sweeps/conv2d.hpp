// 2-D convolution through cuDNN, the library implementation of Conv2dProblem
// (sweeps/conv2d_problem.hpp: the spec, shapes, memory orders and analytic
// counts). Two ways to call cuDNN (Conv2dSpec::api):
//   graph   the graph (backend) API, as PyTorch calls cuDNN: an operation graph,
//           an execution plan built once in prepare(), cudnnBackendExecute per
//           call (sweeps/conv2d_graph.cpp, on sweeps/cudnn_graph.hpp);
//   legacy  the deprecated convolution API (cudnn_cnn_v9.h), which cuDNN 9 maps
//           onto its graph engines inside every call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/conv2d_problem.hpp"
#include "sweeps/cudnn_support.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/operator.hpp"

namespace timeroof {

// check() compares against the CPU reference up to this many multiply-adds
// (about a second of host time), and against a second cuDNN algorithm above it
// (the next usable one of the heuristic's list, or engine configuration of the
// heuristic lists on the graph path, into a scratch output; the tolerance is
// then the sum of both algorithms'). The tolerance is the precision's
// (relative_tolerance()), x10 for fp32 through FFT / Winograd, and at least
// 4 * 2^-24 * sqrt(L) for dot products of length L (fp32 accumulation).
inline constexpr double kConv2dCpuReferenceMaxMacs = 1e8;
enum class CheckMethod { automatic, cpu_reference, second_algorithm };

class Conv2dState;

// Declared as Lstm is on purpose: every operator follows one template
// (docs/design.md, "Adding an operator"), so `duplicates` pairs the two.
class Conv2d final : public Operator {
 public:
  // Validates `spec` (throws a usage error) and does no GPU work. `libraries`
  // are the library handles shared between the operators of a sweep (cudnnCreate
  // is slow); null: prepare() creates its own.
  explicit Conv2d(Conv2dSpec spec, std::shared_ptr<LibraryHandles> libraries = nullptr);
  ~Conv2d() override;

  const Conv2dProblem& problem() const override { return problem_; }
  std::string algorithm() const override;
  // Both APIs: "cudnn_api" ("graph" / "legacy"), "workspace_bytes",
  // "deterministic", "algorithm_selection" (heuristic / exhaustive / fixed), and
  // "nvidia_tf32_override" when that variable is set.
  // graph:  "engine" (global index), "knobs" ({knob name: choice}),
  //         "numerical_notes" / "behavior_notes" (cuDNN's enum names),
  //         "heuristic_mode" (CUDNN_HEUR_MODE_A / CUDNN_HEUR_MODE_FALLBACK, or
  //         "none" for a named engine in neither list) and "heuristic_rank" (the
  //         plan's 0-based place in that list, -1 for none); exhaustive search adds
  //         "search_time_ms" (the chosen plan's time per call while searching),
  //         "search_duration_ms" (the whole search) and "plans_timed".
  // legacy: "cudnn_math_type", and "search_time_ms" for exhaustive search.
  nlohmann::json details() const override;
  // The problem's tensors (Conv2dProblem::inputs()) in the operator's buffers.
  std::vector<DeviceTensor> inputs() const override;
  std::vector<DeviceTensor> outputs() const override;

  // Builds everything a call needs once (the graph path: operation graph,
  // execution plan, workspace and variant pack) and runs the call once, so lazy
  // library and module loading are done before anyone captures run().
  void prepare(cudaStream_t stream) override;
  // Points the (possibly shared) handle at `stream` when it is elsewhere and
  // enqueues the call: no allocation, no descriptor work, so it can be captured
  // into a CUDA graph (cudaStreamCaptureModeThreadLocal).
  void run(cudaStream_t stream) override;
  CheckResult check() override { return check(CheckMethod::automatic); }
  CheckResult check(CheckMethod method);

  const Conv2dSpec& spec() const noexcept { return problem_.spec(); }
  std::size_t workspace_bytes() const noexcept;
  bool deterministic() const noexcept;
  // Copies a tensor to the host (synchronizes the prepare() stream): as doubles,
  // or as the raw stored bytes.
  std::vector<double> download(ConvTensor which) const;
  std::vector<std::byte> download_bytes(ConvTensor which) const;

 private:
  void* buffer(const std::string& role) const;

  Conv2dProblem problem_;
  std::shared_ptr<LibraryHandles> libraries_;
  std::unique_ptr<Conv2dState> state_;  // created by prepare()
};

// Internal: how a prepared Conv2d reaches cuDNN, one implementation per API
// (legacy in conv2d.cpp, graph in conv2d_graph.cpp). Not for use elsewhere.
namespace conv2d_detail {

// The operator's device tensors by their forward names (bwd_data writes dx into
// x and reads dy from y; bwd_filter writes dw into w).
struct ConvBuffers {
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
};

// A second algorithm's output, for check().
struct SecondRun {
  std::string name;        // empty when none could run
  bool transform = false;  // computed through FFT or Winograd
  std::string why_none;    // what was tried, when none could run
};

class Conv2dPath {
 public:
  Conv2dPath() = default;
  virtual ~Conv2dPath() = default;
  Conv2dPath(const Conv2dPath&) = delete;
  Conv2dPath& operator=(const Conv2dPath&) = delete;

  // Enqueues one call on the handle's current stream, overwriting the output.
  virtual void execute() = 0;
  virtual std::string name() const = 0;        // Operator::algorithm()
  virtual nlohmann::json details() const = 0;  // the API's own keys (see Conv2d::details)
  virtual std::size_t workspace_bytes() const = 0;
  virtual bool deterministic() const = 0;
  virtual bool transform() const = 0;  // FFT or Winograd: fp32 loses a digit
  // Runs the next usable algorithm other than the chosen one and those named in
  // `tried` into `output` (sized as the direction's output) on the handle's
  // stream, and synchronizes it.
  virtual SecondRun run_second(void* output, const std::vector<std::string>& tried) = 0;
};

// Pick the implementation as Conv2dSpec::algorithm says and build what a call
// needs; the handle already points at `stream`, the buffers hold random data.
std::unique_ptr<Conv2dPath> prepare_legacy(const Conv2dSpec& spec, cudnnHandle_t handle,
                                           cudaStream_t stream, const ConvBuffers& buffers);
std::unique_ptr<Conv2dPath> prepare_graph(const Conv2dSpec& spec, cudnnHandle_t handle,
                                          cudaStream_t stream, const ConvBuffers& buffers);

}  // namespace conv2d_detail

}  // namespace timeroof
