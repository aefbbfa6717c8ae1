// The interface every library implementation of a problem (sweeps/problem.hpp)
// implements (cuDNN Conv2D and LSTM now; cuBLASLt GEMM, attention later), so the
// runner allocates, checks, times, traces and profiles any of them the same way
// and never changes when an operator is added. The identity and analytic counts
// are the problem's; an operator adds the library's choices and the GPU work.
//
// Life of an operator in the runner:
//   make_operator (sweeps/implementations.hpp: validates, no GPU work) -> describe() into a Point
//   -> prepare(stream) -> check() once -> run(stream) as often as the timing, trace and counter
//   passes need (CUPTI user replay re-runs it per pass) -> destroy.
// A throw from prepare() or run() becomes the point's status through outcome_of().
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "core/vocabulary.hpp"
#include "gpu/check.hpp"
#include "sweeps/problem.hpp"

namespace timeroof {

// Largest normwise relative error an output may show against an exact (double)
// reference: fp32 1e-5, tf32 1e-3, fp16, bf16 and fp8 (bf16 output) 1e-2, int8 0
// (exact). The error is
// max_i |out_i - ref_i| / max_i |ref_i|, so outputs near zero do not inflate it.
double relative_tolerance(Precision precision);
// max_i |out_i - ref_i| / max_i |ref_i|; infinity if `out` holds a NaN or the sizes
// differ, 0 when both are all zeros.
double relative_error(std::span<const double> out, std::span<const double> ref);

// The tolerance floor of a sum of `reduction_length` rounded terms: 4 x 2^-24 x sqrt(L),
// which exceeds a precision's own tolerance only for long sums (about 1,700 terms at fp32).
double long_sum_tolerance(double reduction_length);

enum class CheckStatus { passed, failed, skipped };
const char* to_string(CheckStatus status);

// What check() found.
struct CheckResult {
  CheckStatus status = CheckStatus::skipped;
  std::string method;         // "cpu reference (double)", "agreement with CUDNN_..."
  double relative_error = 0;  // normwise, see relative_error()
  double tolerance = 0;
  std::size_t elements = 0;  // output elements compared
  std::string detail;        // one line: what was compared and the verdict, or why skipped
  bool passed() const noexcept { return status == CheckStatus::passed; }
};

// Sets status from relative_error against tolerance (NaN fails) and starts detail
// with "<method>: relative error E <= T over N outputs"; callers append what ran.
void judge(CheckResult& result);

// One device tensor a caller brings to a call or takes back from it (see
// Operator::inputs()). `data` is the operator's own buffer: null before prepare().
struct DeviceTensor {
  std::string role;  // the library's name of the argument: "x", "dy", "hx", "dw", ...
  void* data = nullptr;
  std::size_t bytes = 0;  // as stored (element_bytes() x elements)
};

class Operator {
 public:
  Operator() = default;
  virtual ~Operator() = default;
  Operator(const Operator&) = delete;
  Operator& operator=(const Operator&) = delete;

  // The host-only problem this operator measures; valid right after construction.
  virtual const Problem& problem() const = 0;
  // Its identity and analytic counts (Problem's).
  std::string op() const { return problem().op(); }
  nlohmann::json params() const { return problem().params(); }
  Precision precision() const { return problem().precision(); }
  MathMode math_mode() const { return problem().math_mode(); }
  double flops() const { return problem().flops(); }
  double min_bytes() const { return problem().min_bytes(); }
  double expected_launches() const { return problem().expected_launches(); }
  // The implementation actually used, by the library's name (e.g.
  // "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM"); empty before prepare().
  virtual std::string algorithm() const = 0;
  // Facts prepare() decided that are results rather than configuration
  // (workspace bytes, the library's math type, determinism, ...); {} before prepare().
  virtual nlohmann::json details() const { return nlohmann::json::object(); }

  // The per-call data of one run() call, for sweeps that time host<->device
  // transfers with it: inputs() are what a caller brings (activations, recurrent
  // state, incoming gradients, saved forward outputs the call reads), outputs()
  // what it takes back. Parameters (weights, filters) are NOT listed: they stay
  // resident on the GPU between calls, as every framework keeps them, and so do
  // library-private spaces (workspace, cuDNN's RNN reserve space), so a transfer
  // sweep measures moving a call's data, not its model. Roles and bytes are the
  // problem's (Problem::inputs()) unless the library sizes a tensor itself;
  // `data` is valid after prepare(). A caller may overwrite an input's buffer
  // between run() calls on the run() stream (with the same values, the results
  // stay the same) and reads an output's after run(). By default the problem's
  // tensors with no buffer.
  virtual std::vector<DeviceTensor> inputs() const;
  virtual std::vector<DeviceTensor> outputs() const;

  // Allocates device memory, fills the inputs with random non-zero data on the
  // device, picks the algorithm and its workspace. Synchronizes `stream` before
  // returning, so a failure surfaces here. Throws GpuError (see outcome_of()).
  virtual void prepare(cudaStream_t stream) = 0;
  // Enqueues exactly one call of the operator on `stream` and returns without
  // synchronizing. Idempotent: the outputs are overwritten, never accumulated
  // into, so every call computes the same result from the same inputs (bitwise
  // the same where details()["deterministic"] is true).
  virtual void run(cudaStream_t stream) = 0;
  // Verifies the output once after prepare(): runs the operator itself on the
  // prepare() stream, then compares against a CPU reference in double (small
  // shapes) or against a second library algorithm (large ones).
  virtual CheckResult check() = 0;
};

// `tensors` with the buffers `buffer(role)` names (null: none yet).
std::vector<DeviceTensor> with_buffers(const std::vector<TensorArgument>& tensors,
                                       const std::function<void*(const std::string& role)>& buffer);

// The identity fields of a Point for `op`: op, params, precision, math mode,
// algorithm (empty before prepare()), analytic FLOPs and minimum bytes.
Point describe(const Operator& op);

// A point's status and the reason in the library's words.
struct Outcome {
  PointStatus status = PointStatus::ok;
  std::string reason;  // empty when ok
};

// How a failed library call maps onto a point's status:
//   unsupported    cuDNN NOT_SUPPORTED* and BAD_PARAM (an impossible configuration),
//                  cuBLAS NOT_SUPPORTED, a usage error (a spec the operator rejects);
//   out_of_memory  cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY, cuDNN
//                  host/device ALLOCATION_FAILED (ALLOC_FAILED), cuBLAS ALLOC_FAILED,
//                  std::bad_alloc;
//   failed         anything else (an execution failure, a bug).
// The reason keeps the library's message and the failing function's name, without
// the argument text, file and line.
Outcome outcome_of(const GpuError& error);
// The same for the exception being handled; call only inside a catch block.
Outcome outcome_of_current_exception();

// Runs `body` and turns whatever it throws into an Outcome; ok if nothing is thrown.
template <typename Body>
Outcome guarded(Body&& body) {
  try {
    std::forward<Body>(body)();
    return {};
  } catch (...) {
    return outcome_of_current_exception();
  }
}

}  // namespace timeroof
