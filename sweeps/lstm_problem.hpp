// The LSTM problem, host only: the spec of a cuDNN LSTM call, its validation,
// analytic FLOPs and minimum bytes, params <-> spec, the CPU reference, and
// LstmProblem (sweeps/problem.hpp). The cuDNN implementation that measures it
// is Lstm (sweeps/lstm.hpp).
//
// LSTM through cuDNN's RNN v8 API (cudnn_adv_v9.h): inference forward, training
// forward, backward data and backward weights; uni- or bidirectional, any number
// of layers; fp32 / tf32 / fp16 / bf16 data, Tensor Cores allowed or FMA only.
//
// The cell (cuDNN's CUDNN_LSTM, no peepholes, no projection, no clipping, both
// bias vectors CUDNN_RNN_DOUBLE_BIAS, linear input CUDNN_LINEAR_INPUT, no dropout),
// for every layer l, direction d and time step t (the backward direction walks t
// from T-1 down to 0):
//   i_t  = sigmoid(W_i x_t + R_i h_{t-1} + bW_i + bR_i)      input gate
//   f_t  = sigmoid(W_f x_t + R_f h_{t-1} + bW_f + bR_f)      forget gate
//   g_t  = tanh   (W_g x_t + R_g h_{t-1} + bW_g + bR_g)      new memory c'
//   o_t  = sigmoid(W_o x_t + R_o h_{t-1} + bW_o + bR_o)      output gate
//   c_t  = f_t * c_{t-1} + i_t * g_t,   h_t = o_t * tanh(c_t)
// with h_{-1} = hx and c_{-1} = cx of the layer and direction. Layer 0 reads x;
// layer l >= 1 reads layer l-1's output (H wide, 2H when bidirectional).
//
// Shapes (B batch, T seq_length, I input_size, H hidden_size, L layers, D = 1 or
// 2 directions, I_l = I for l = 0 and D H above), all dense, row-major:
//   x, dx        T x B x I      (sequence-major, every sequence T long)
//   y, dy        T x B x D H    (forward direction's h in the first H columns)
//   hx cx hy cy  L D x B x H    (index l D + d), and dhx dcx dhy dcy alike
//   weights      per layer l and direction d ("pseudo layer" l D + d): W_g
//                H x I_l and R_g H x H for g = i, f, g, o (cuDNN's linLayerID 0-3
//                and 4-7), and bias vectors bW_g, bR_g of H each; cuDNN packs them
//                in one opaque weight space (cudnnGetRNNWeightParams finds them).
//
// What one run() call is, per pass:
//   inference         cudnnRNNForward(CUDNN_FWD_MODE_INFERENCE): x hx cx w -> y hy cy.
//   training_forward  cudnnRNNForward(CUDNN_FWD_MODE_TRAINING): the same, and it
//                     also writes the reserve space that the backward passes need.
//   backward_data     cudnnRNNBackwardData_v8: y dy dhy dcy hx cx w -> dx dhx dcx.
//                     prepare() runs one training forward first (it fills the
//                     reserve space) and keeps a copy of the reserve space. cuDNN
//                     overwrites the saved gate activations there with their
//                     gradients (for backward weights), so a second call would
//                     compute garbage (seen on an H200, cuDNN 9.14: relative error
//                     ~1); run() therefore enqueues a device-to-device
//                     cudaMemcpyAsync of the copy back into the reserve space
//                     (details()["restored_reserve_bytes"]), then the backward call.
//   backward_weights  cudnnRNNBackwardWeights_v8: x hx y (+ reserve) -> dw.
//                     prepare() runs a training forward and a backward-data call
//                     first (cuDNN requires both before it: the gate gradients
//                     live in the reserve space); only the weight-gradient call
//                     is timed. cuDNN's CUDNN_WGRAD_MODE_ADD accumulates into dw;
//                     prepare() asks for CUDNN_WGRAD_MODE_SET (overwrite) and,
//                     where cuDNN refuses it (cuDNN 9.14 does, NOT_SUPPORTED),
//                     uses ADD with dw zeroed by one cudaMemsetAsync right before
//                     the call in run(), so reruns are identical
//                     (details()["wgrad_mode"] says which). The weight-gradient
//                     call only reads the reserve space: reruns need no restore.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/problem.hpp"

namespace timeroof {

enum class LstmPass { inference, training_forward, backward_data, backward_weights };
// cuDNN's recurrence algorithms (cudnnRNNAlgo_t): standard = a GEMM per step and
// elementwise kernels; the persistent ones keep weights on chip (with limits on
// hidden size, batch and precision; outside them cuDNN says NOT_SUPPORTED).
enum class LstmAlgorithm { standard, persist_static, persist_dynamic, persist_static_small_h };

const char* to_string(LstmPass pass);            // "inference", "training_forward", ...
const char* to_string(LstmAlgorithm algorithm);  // "standard", "persist_static", ...
// "CUDNN_RNN_ALGO_STANDARD", ...
const char* cudnn_name(LstmAlgorithm algorithm);
// Throw a usage error naming the field and the allowed values.
LstmPass parse_lstm_pass(std::string_view text);
LstmAlgorithm parse_lstm_algorithm(std::string_view text);

struct LstmSpec {
  // The paper's baseline: batch 16, 16 steps, 32 features, hidden 16.
  std::int64_t batch = 16;        // B, sequences per call
  std::int64_t seq_length = 16;   // T, time steps ("steps")
  std::int64_t input_size = 32;   // I, features per step of x ("features")
  std::int64_t hidden_size = 16;  // H, width of h and c ("hidden")
  std::int64_t layers = 1;        // L, stacked layers
  bool bidirectional = false;     // D = 2 directions when true
  LstmPass pass = LstmPass::inference;
  Precision precision = Precision::fp32;
  // Unset: fp32 -> fma_only, tf32 / fp16 / bf16 -> tensor. fp32 with tensor is
  // rejected (that is tf32), and so is tf32 with fma_only (that is fp32). cuDNN
  // math type: fma_only -> CUDNN_FMA_MATH (no TF32), tf32 -> CUDNN_DEFAULT_MATH
  // (TF32 permitted), fp16 / bf16 tensor -> CUDNN_TENSOR_OP_MATH.
  std::optional<MathMode> math;
  LstmAlgorithm algorithm = LstmAlgorithm::standard;
};

// Throws a usage error before any GPU work when the spec cannot describe an LSTM;
// the message names the field and the allowed values.
void validate(const LstmSpec& spec);
// The math mode the spec resolves to (its `math`, or the precision's default).
MathMode resolved_math(const LstmSpec& spec);
// backward_data or backward_weights: the passes that need a training forward's
// reserve space.
bool is_backward(LstmPass pass);

// D: 1 or 2.
std::int64_t lstm_directions(const LstmSpec& spec);
// I_l: input_size for layer 0, D H for deeper layers.
std::int64_t lstm_layer_input_size(const LstmSpec& spec, std::int64_t layer);

// Element counts (doubles: huge specs must not overflow before validation fails them).
double lstm_x_elements(const LstmSpec& spec);      // T B I        (x, dx)
double lstm_y_elements(const LstmSpec& spec);      // T B D H      (y, dy)
double lstm_state_elements(const LstmSpec& spec);  // L D B H      (each of hx cx hy cy ...)
// Sum over layers and directions of 4 H I_l + 4 H H + 8 H: the weights and biases
// (cuDNN's weight space may add alignment padding; that is not counted).
double lstm_weight_elements(const LstmSpec& spec);
// The tensors of a call by shape: x (T B I), y (T B D H), one state (L D B H), the
// weights (lstm_weight_elements).
enum class LstmShape { x, y, state, weights };
// Bytes of one of them at the stored precision, counted in integers. validate()
// refuses a spec where one would pass kMaxTensorBytes (sweeps/problem.hpp),
// naming the sizes; this throws that error.
std::int64_t lstm_tensor_bytes(const LstmSpec& spec, LstmShape shape);

// FLOPs of one call (a multiply-add is 2), summed over layers l and directions:
//
//   gemm(l)     = 2 * 4H * (I_l + H) * B per time step: the four gates' input GEMM
//                 W x (4H x I_l times I_l x B) and recurrent GEMM R h (4H x H times
//                 H x B). 2 M N K per GEMM also covers the one add per output that
//                 joins the input and recurrent parts (beta = 1 accumulation).
//   forward     = sum_l D T (gemm(l) + 17 H B). The 17 elementwise FLOPs per hidden
//                 unit and step: 8 bias adds (bW and bR of 4 gates), 5 activations
//                 counted as 1 each (3 sigmoids, tanh of g, tanh of c), 3 for
//                 c = f c + i g, 1 for h = o tanh(c). Inference and training
//                 forward compute the same; training also stores the gates.
//   backward_data = sum_l D T (gemm(l) + 23 H B). Gradients through the gates are
//                 two GEMMs with the transposed weights: dx_in = W^T dG (I_l x 4H
//                 times 4H x B) and dh_{t-1} = R^T dG (H x 4H times 4H x B), the
//                 same multiply-adds as the forward GEMMs, so backward data is 1x
//                 (not 2x) the forward GEMM FLOPs; the weight-gradient GEMMs that
//                 make "backward = 2x forward" belong to backward_weights. The 23
//                 elementwise FLOPs per unit and step, from the saved activations:
//                 dh = dy + dh_next (1); do = dh tanh(c) (1); dc = dc_next + dh o
//                 (1 - tanh(c)^2) (5); di = dc g, dg = dc i, df = dc c_prev,
//                 dc_prev = dc f (4); the pre-activation gradients di i (1 - i),
//                 df f (1 - f), do o (1 - o), dg (1 - g^2) (3 each, 12).
//   backward_weights = sum_l D T (gemm(l) + 8 H B): dW += dG x_in^T (4H x B times
//                 B x I_l) and dR += dG h_{t-1}^T (4H x B times B x H), the same
//                 2 * 4H (I_l + H) B per step; plus the bias gradients dbW and dbR,
//                 each a sum of dG over the batch (4H B adds each, 8 H B).
inline constexpr double kLstmForwardElementwiseFlops = 17;
inline constexpr double kLstmBackwardDataElementwiseFlops = 23;
inline constexpr double kLstmBackwardWeightsElementwiseFlops = 8;
// sum_l D T 8 H (I_l + H) B: the GEMM part, the same for every pass.
double lstm_gemm_flops(const LstmSpec& spec);
double lstm_flops(const LstmSpec& spec);

// Minimum bytes of one call: every tensor argument of the cuDNN call read or
// written once at the stored precision (the reserve space, cuDNN's own record of
// the forward activations whose size and content are its choice, and the
// workspace are not counted; details() reports their sizes). With X = T B I,
// Y = T B D H, S = L D B H and P = lstm_weight_elements:
//   inference, training_forward: x, hx, cx, w read; y, hy, cy written:
//                     X + 2 S + P + Y + 2 S
//   backward_data:    y, dy, hx, cx, dhy, dcy, w read; dx, dhx, dcx written:
//                     2 Y + 4 S + P + X + 2 S
//   backward_weights: x, hx, y read; dw written:  X + S + Y + P
// all times sizeof(element) (4 for fp32 / tf32, 2 for fp16 / bf16).
double lstm_min_bytes(const LstmSpec& spec);

// "lstm_inference", "lstm_training_forward", "lstm_backward_data", "lstm_backward_weights".
std::string lstm_op_name(LstmPass pass);

// A point's params object <-> spec. Keys: batch, seq_length, input_size,
// hidden_size, layers, bidirectional (0 or 1; true / false accepted), pass,
// precision, math (absent: the precision's default), algorithm (absent:
// standard). Absent integer keys take the paper's baseline (LstmSpec's defaults).
// lstm_spec_from_params throws a usage error naming the key (unknown keys too);
// the spec as a whole is validated where it is used, by LstmProblem.
LstmSpec lstm_spec_from_params(const nlohmann::json& params);
// Every key above (math resolved), so lstm_spec_from_params(lstm_params(s)) == s
// up to `math` being explicit.
nlohmann::json lstm_params(const LstmSpec& spec);

// ---------------------------------------------------------------------------
// CPU reference in double (Lstm::check() for small shapes, and the tests).

// The weights of one pseudo layer (layer l, direction d: index l D + d), gates in
// cuDNN's order i, f, g, o: w[(gate H + j) I_l + k], r[(gate H + j) H + k],
// bw[gate H + j], br[gate H + j].
struct LstmLayerWeights {
  std::int64_t input_width = 0;  // I_l
  std::vector<double> w, r, bw, br;
};
using LstmWeights = std::vector<LstmLayerWeights>;
// Zero weights of the right shapes for `spec`.
LstmWeights lstm_zero_weights(const LstmSpec& spec);
// All weights flattened pseudo layer by pseudo layer (w, r, bw, br each).
std::vector<double> flatten(const LstmWeights& weights);

struct LstmForwardResult {
  std::vector<double> y, hy, cy;
};
struct LstmBackwardResult {
  std::vector<double> dx, dhx, dcx;
  LstmWeights dw;  // gradients of every weight and bias
};
// The equations at the top of this file, tensors in the layouts above.
LstmForwardResult lstm_reference_forward(const LstmSpec& spec, std::span<const double> x,
                                         std::span<const double> hx, std::span<const double> cx,
                                         const LstmWeights& weights);
// Backpropagation through time of the loss sum(dy y) + sum(dhy hy) + sum(dcy cy):
// the gradients with respect to x, hx, cx and every weight, as cuDNN's backward
// data (dx, dhx, dcx) and backward weights (dw) compute them.
LstmBackwardResult lstm_reference_backward(const LstmSpec& spec, std::span<const double> x,
                                           std::span<const double> hx, std::span<const double> cx,
                                           const LstmWeights& weights, std::span<const double> dy,
                                           std::span<const double> dhy,
                                           std::span<const double> dcy);

// ---------------------------------------------------------------------------
// The problem.

// The problem of one validated spec (the constructor validates: usage error).
// Declared as Conv2dProblem is on purpose: every operator follows one template
// (docs/design.md, "Adding an operator"), so `duplicates` pairs the two.
class LstmProblem final : public Problem {
 public:
  explicit LstmProblem(LstmSpec spec);

  std::string op() const override;
  // lstm_params without precision and math: a Point carries those in fields of their own.
  nlohmann::json params() const override;
  Precision precision() const override { return spec_.precision; }
  MathMode math_mode() const override;
  double flops() const override;
  double min_bytes() const override;
  // Seen on an H200 (cuDNN 9.14, standard algorithm): 2 T + 1 per layer and
  // direction (3 T + 1 for some fp32 inference calls), 4-6 for backward_weights.
  double expected_launches() const override;
  // The call's data (Operator::inputs()): every tensor argument of the cuDNN call
  // but the weights, the workspace and the reserve space, which stay resident, as
  // a framework keeps its parameters and cuDNN's saved forward state on the GPU
  // between the passes of a training step. hx and cx are always passed (this
  // operator never uses cuDNN's implicit zero state), so they are always moved:
  //   inference, training_forward  x, hx, cx -> y, hy, cy
  //   backward_data                y, dy, hx, dhy, cx, dcy -> dx, dhx, dcx
  //   backward_weights             x, hx, y -> dw (the whole weight-gradient space,
  //                                handed to the optimizer: here the analytic
  //                                lstm_weight_elements, which omits any padding;
  //                                Lstm::outputs() after prepare() cuDNN's size)
  std::vector<TensorArgument> inputs() const override;
  std::vector<TensorArgument> outputs() const override;

  const LstmSpec& spec() const noexcept { return spec_; }

 private:
  LstmSpec spec_;
};

}  // namespace timeroof
