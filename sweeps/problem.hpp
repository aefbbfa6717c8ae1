// The host-only problem of one sweep point (cutlass's GemmProblem): what the
// point computes, in the sweep's own vocabulary, with its analytic work and
// traffic and the tensors a call takes. No GPU, no CUDA header: the families,
// the spec parser and the dry run build and test in the analysis-only
// configuration. The library implementation that measures a problem
// (sweeps/operator.hpp: cuDNN graph, cuBLASLt, own kernels) is built from it in
// the CUDA build only (sweeps/implementations.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/vocabulary.hpp"

namespace timeroof {

// The precisions (core/vocabulary.hpp) the cuDNN operators take.
inline constexpr Precision kOperatorPrecisions[] = {Precision::fp32, Precision::tf32,
                                                    Precision::fp16, Precision::bf16};
// Their spellings, for the families' precision axes.
inline std::vector<std::string> operator_precision_names() {
  std::vector<std::string> names;
  for (Precision p : kOperatorPrecisions) names.emplace_back(to_string(p));
  return names;
}

// One tensor argument of a call, by the library's name of the argument ("x",
// "dy", "hx", "dw", ...) and its size as stored (element_bytes() x elements).
struct TensorArgument {
  std::string role;
  std::size_t bytes = 0;
};

// Tensor sizes are counted in std::int64_t (cuDNN's dimensions, strides and
// sizes; the byte counts a transfer copies): a shape whose tensor would hold more
// bytes than this is refused by the family's validation, never wrapped around.
inline constexpr std::int64_t kMaxTensorBytes = std::numeric_limits<std::int64_t>::max();

// a x b and a + b of non-negative counts; nullopt where the result would pass
// kMaxTensorBytes.
std::optional<std::int64_t> checked_product(std::initializer_list<std::int64_t> factors);
std::optional<std::int64_t> checked_sum(std::initializer_list<std::optional<std::int64_t>> terms);

// One named size of a shape, for the message of tensor_bytes.
struct Extent {
  const char* name;
  std::int64_t value;
};
// The bytes of the tensor `tensor` of `operator_name` with `extents` elements of
// `element_bytes` each; a usage error naming the extents, their values and the
// limit (kMaxTensorBytes) where that would not fit, with `fix` as the allowed
// values ("smaller batch, channels, height or width").
std::int64_t tensor_bytes(const std::string& operator_name, const std::string& tensor,
                          std::initializer_list<Extent> extents, std::size_t element_bytes,
                          const std::string& fix);
// That usage error for a tensor whose element count is described by `shape`
// ("x = n x c x h x w = 65536 x 65536 x 65536 x 65536 elements").
Error tensor_too_large(const std::string& operator_name, const std::string& shape,
                       std::size_t element_bytes, const std::string& fix);

class Problem {
 public:
  Problem() = default;
  virtual ~Problem() = default;
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  virtual std::string op() const = 0;         // "conv2d_fwd", "lstm_train", ...
  virtual nlohmann::json params() const = 0;  // the configuration; numbers stay numbers
  virtual Precision precision() const = 0;    // Point::precision = to_string(precision())
  virtual MathMode math_mode() const = 0;
  // Analytic work of one call, in FLOPs (a multiply-add is 2).
  virtual double flops() const = 0;
  // Analytic minimum traffic of one call in bytes: every tensor the call reads or
  // writes, once, at its stored precision. Workspaces and internal accumulators
  // are not counted.
  virtual double min_bytes() const = 0;
  // A rough count of the kernels one call launches, for --dry-run's time model
  // only (the trace pass counts the real ones; the counter pass pays per kernel).
  virtual double expected_launches() const { return 1; }
  // The per-call data a caller brings (inputs) and takes back (outputs), for
  // sweeps that time host<->device transfers (Operator::inputs() says what is
  // and is not listed). Empty by default: such a problem has nothing a transfer
  // could move, and a sweep asking for transfers fails with that reason.
  virtual std::vector<TensorArgument> inputs() const { return {}; }
  virtual std::vector<TensorArgument> outputs() const { return {}; }
};

}  // namespace timeroof
