#include "sweeps/attention.hpp"

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/check_cudnn.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "kernels/device_fill.hpp"
#include "sweeps/attention_graph.hpp"
#include "sweeps/attention_reference.hpp"
#include "sweeps/cudnn_graph.hpp"
#include "sweeps/cudnn_support.hpp"
#include "sweeps/sampling.hpp"

namespace timeroof {

namespace {

namespace cg = cudnn_graph;
namespace ag = attention_graph;
namespace ref = attention_reference;

// A graph with its plan, workspace and variant pack, ready to execute.
struct Executable {
  std::unique_ptr<ag::Graph> graph;
  std::unique_ptr<cg::ExecutionPlan> plan;
  std::string heuristic;  // the mode that listed the plan
  std::size_t rank = 0;   // its place in that list
  int configs_tried = 0;
  DeviceBuffer<std::byte> workspace;
  std::unique_ptr<cg::VariantPack> pack;
};

// The first configuration of heuristic A, then of the fallback list, that
// finalizes into a plan; NOT_SUPPORTED with the last reason when none does.
void choose_plan(Executable& exe) {
  std::string last_reason = "no configuration listed";
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::vector<cg::Descriptor> configs;
    const Outcome listed =
        guarded([&] { configs = cg::heuristic_configs(exe.graph->descriptor(), mode); });
    if (listed.status != PointStatus::ok) {
      last_reason = cg::to_string(mode) + ": " + listed.reason;
      continue;
    }
    for (std::size_t rank = 0; rank < configs.size(); ++rank) {
      ++exe.configs_tried;
      auto config = std::make_shared<const cg::Descriptor>(std::move(configs[rank]));
      const Outcome made = guarded([&] { exe.plan = std::make_unique<cg::ExecutionPlan>(config); });
      if (exe.plan) {
        exe.heuristic = cg::to_string(mode);
        exe.rank = rank;
        return;
      }
      last_reason = made.reason;
    }
  }
  throw GpuError("cuDNN", CUDNN_STATUS_NOT_SUPPORTED,
                 "CUDNN_STATUS_NOT_SUPPORTED: no engine configuration of heuristics A and "
                 "fallback runs this attention graph (" +
                     std::to_string(exe.configs_tried) + " tried; last: " + last_reason + ")");
}

// Binds `tensors` (and the graph's by-value scalars) with a workspace the plan needs.
void bind(Executable& exe, std::vector<cg::TensorPointer> tensors) {
  exe.workspace = DeviceBuffer<std::byte>(static_cast<std::size_t>(exe.plan->workspace_bytes()));
  for (const cg::TensorPointer& scalar : exe.graph->scalars()) tensors.push_back(scalar);
  exe.pack = std::make_unique<cg::VariantPack>(tensors, exe.workspace.get());
}

// A stored fp16 / bf16 / fp8 e4m3 tensor copied to the host, read as double
// (fp8: times its descale, the value it stands for).
class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(const void* device, std::size_t count, DataType type, cudaStream_t stream,
             double descale = 1)
      : raw_(count * element_bytes(type)), type_(type), descale_(descale) {
    TR_CUDA_CHECK(
        cudaMemcpyAsync(raw_.data(), device, raw_.size(), cudaMemcpyDeviceToHost, stream));
  }
  double operator()(std::size_t index) const {
    if (type_ == DataType::fp8_e4m3) {
      __nv_fp8_e4m3 value;
      value.__x = static_cast<__nv_fp8_storage_t>(raw_[index]);
      return static_cast<double>(static_cast<float>(value)) * descale_;
    }
    std::uint16_t bits = 0;
    std::memcpy(&bits, raw_.data() + 2 * index, sizeof bits);
    if (type_ == DataType::bf16) {
      const std::uint32_t wide = std::uint32_t{bits} << 16;
      float value = 0;
      std::memcpy(&value, &wide, sizeof value);
      return value;
    }
    __half_raw half_bits;
    half_bits.x = bits;
    return static_cast<double>(__half2float(__half(half_bits)));
  }

 private:
  std::vector<std::uint8_t> raw_;
  DataType type_ = DataType::fp16;
  double descale_ = 1;
};

// The fp32 statistics on the host.
class HostFloats {
 public:
  HostFloats(const float* device, std::size_t count, cudaStream_t stream) : values_(count) {
    TR_CUDA_CHECK(cudaMemcpyAsync(values_.data(), device, count * sizeof(float),
                                  cudaMemcpyDeviceToHost, stream));
  }
  double operator()(std::size_t index) const { return values_[index]; }

 private:
  std::vector<float> values_;
};

// Library and reference rows of one output tensor.
struct Compared {
  std::vector<double> library, reference;
  void add(const HostTensor& out, const ref::Geometry& g, bool key_shaped, std::int64_t batch,
           std::int64_t row, std::int64_t head, const std::vector<double>& expected) {
    for (std::int64_t x = 0; x < g.d; ++x) {
      library.push_back(
          out(key_shaped ? g.kv_index(batch, row, head, x) : g.q_index(batch, row, head, x)));
      reference.push_back(expected[static_cast<std::size_t>(x)]);
    }
  }
};

// fp8 attention needs Hopper or later and cuDNN 9.1+ (not 9.10.0), on Hopper
// kAttentionFp8HopperMinCudnn+; there cuDNN has no bottom-right causal mask for
// fp8 (cudnn-frontend's support surface: Blackwell only). One-line refusals
// naming the GPU or the version.
void require_fp8_attention(const AttentionSpec& spec) {
  int device = 0, major = 0, minor = 0;
  TR_CUDA_CHECK(cudaGetDevice(&device));
  TR_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TR_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const std::string gpu = std::to_string(major) + "." + std::to_string(minor);
  if (major < 9)
    throw usage_error(
        "attention: precision = fp8 needs compute capability 9.0+ (cuDNN's fp8 "
        "attention); this GPU is " +
        gpu + "; allowed here: fp16, bf16");
  const std::size_t version = cudnnGetVersion();
  if (version < 90100 || version == 91000)
    throw usage_error("attention: precision = fp8 needs cuDNN 9.1+ (not 9.10.0); this is cuDNN " +
                      cudnn_version_text(version) + "; allowed here: fp16, bf16");
  if (major < 10 && spec.mask == AttentionMask::causal && spec.seq_q != spec.key_length())
    throw usage_error(
        "attention: precision = fp8 with mask = causal and seq_q = " + std::to_string(spec.seq_q) +
        " != seq_kv = " + std::to_string(spec.key_length()) +
        ": cuDNN has the bottom-right causal mask in fp8 on Blackwell only; this "
        "GPU is " +
        gpu + "; allowed here: seq_q = seq_kv, mask = none, or fp16 / bf16");
  if (major < 10 && spec.direction == AttentionDirection::bwd &&
      spec.head_dim != kAttentionFp8HopperBwdHeadDim)
    throw usage_error("attention: precision = fp8 with direction = bwd and head_dim = " +
                      std::to_string(spec.head_dim) + ": cuDNN's fp8 backward on this GPU (" + gpu +
                      ") takes head_dim = " + std::to_string(kAttentionFp8HopperBwdHeadDim) +
                      " only; allowed here: head_dim = 128, or fp16 / bf16");
  // Last: the shape refusals above hold on any cuDNN.
  if (major == 9 && version < kAttentionFp8HopperMinCudnn)
    throw usage_error(
        "attention: precision = fp8 on compute capability 9.x needs cuDNN " +
        cudnn_version_text(kAttentionFp8HopperMinCudnn) + "+; this is cuDNN " +
        cudnn_version_text(version) +
        ", whose fp8 flash forward writes wrong rows at random (seen with 9.14); fix: put "
        "a newer cuDNN's lib directory (e.g. pip's nvidia-cudnn-cu13) first on "
        "LD_LIBRARY_PATH, or use fp16 / bf16");
}

// Floats between the fp8 graph's scale and amax tensors in their buffer: each
// 16-byte aligned, as TensorSpec's alignment says.
constexpr std::size_t kFp8Stride = 4;
// The values of kFp8ScaleUids: Q, K, V as drawn (descale 1), P and O x 256.
constexpr float kFp8ScaleValues[] = {
    1.0f, 1.0f, 1.0f, 1.0f / kAttentionFp8Scale, kAttentionFp8Scale, kAttentionFp8Scale};
constexpr std::size_t kFp8Amaxes = 2;  // amax_S, amax_O after the scales

// The fp8 backward's scalars, kFp8Stride floats apart in their buffer: the
// inputs' descales (Q, K, V, dO as drawn: 1; O as the fp8 forward scaled it:
// 1/256), P's scale and descale as the forward's, then the four that depend on
// the gradients' magnitudes (dS's scale and descale, dQ's, dK's and dV's
// scales, set by calibrate_fp8_backward), then the four amax outputs.
enum Fp8BackwardSlot : std::size_t {
  kSlotDescaleQ,
  kSlotDescaleK,
  kSlotDescaleV,
  kSlotDescaleO,
  kSlotDescaleDO,
  kSlotDescaleS,
  kSlotScaleS,
  kSlotDescaleDP,
  kSlotScaleDP,
  kSlotScaleDQ,
  kSlotScaleDK,
  kSlotScaleDV,
  kSlotAmaxDP,
  kSlotAmaxDQ,
  kSlotAmaxDK,
  kSlotAmaxDV,
  kFp8BackwardSlots
};
constexpr ag::Uid kFp8BackwardUids[kFp8BackwardSlots] = {
    ag::kDescaleQ, ag::kDescaleK,  ag::kDescaleV, ag::kDescaleO, ag::kDescaleDO, ag::kDescaleS,
    ag::kScaleS,   ag::kDescaleDP, ag::kScaleDP,  ag::kScaleDQ,  ag::kScaleDK,   ag::kScaleDV,
    ag::kAmaxDP,   ag::kAmaxDQ,    ag::kAmaxDK,   ag::kAmaxDV};

// Delayed scaling, as training recipes do from an amax history: the power of two
// that puts a tensor whose largest magnitude is `amax` into (128, 256] in e4m3
// (max 448: no overflow, small values kept out of the subnormals); 1 while amax
// is not a finite positive number.
float power_of_two_scale(float amax) {
  if (!(amax > 0) || !std::isfinite(amax)) return 1.0f;
  return std::ldexp(1.0f, static_cast<int>(std::floor(std::log2(kAttentionFp8Scale / amax))));
}

}  // namespace

class AttentionState {
 public:
  std::shared_ptr<LibraryHandles> libraries;
  cudaStream_t stream = nullptr;  // the prepare() stream: check() uses it
  DataType type = DataType::fp16;
  DeviceBuffer<std::byte> q, k, v, o, d_o, d_q, d_k, d_v;
  DeviceBuffer<float> stats, softmax_sum, d_q_accum;
  // fp8: the six scales then amax_S and amax_O, kFp8Stride floats apart.
  DeviceBuffer<float> fp8_scalars;
  float amax_s = 0, amax_o = 0;  // fp8: as prepare()'s execute left them
  // fp8 bwd: its scalars (Fp8BackwardSlot) on the device and their host copy.
  DeviceBuffer<float> fp8_backward_scalars;
  std::vector<float> fp8_backward_values;
  float fp8_backward(Fp8BackwardSlot slot) const { return fp8_backward_values[slot * kFp8Stride]; }
  // bwd with the padding mask: seq_q per batch item, then (16-byte aligned) seq_kv.
  DeviceBuffer<std::int32_t> seq_lengths;
  std::size_t seq_kv_offset = 0;
  std::string forward_plan;  // bwd: the plan that made O and the statistics
  // Declared after the buffers: released before them.
  Executable exe;

  cudnnHandle_t handle() const { return libraries->cudnn(); }
  void use_stream(cudaStream_t on) const {
    cudaStream_t current = nullptr;
    TR_CUDNN_CHECK(cudnnGetStream(handle(), &current));
    if (current != on) TR_CUDNN_CHECK(cudnnSetStream(handle(), on));
  }
  void execute(cudaStream_t on) const {
    use_stream(on);
    cg::execute(handle(), *exe.plan, *exe.pack);
  }
};

namespace {

// The fp8 forward's scalars into `tensors` (allocated once per state).
void bind_fp8_forward_scalars(AttentionState& st, std::vector<cg::TensorPointer>& tensors,
                              cudaStream_t stream) {
  constexpr std::size_t scales = std::size(kFp8ScaleValues);
  std::vector<float> values((scales + kFp8Amaxes) * kFp8Stride, 0.0f);
  for (std::size_t i = 0; i < scales; ++i) values[i * kFp8Stride] = kFp8ScaleValues[i];
  st.fp8_scalars = DeviceBuffer<float>(values.size());
  TR_CUDA_CHECK(cudaMemcpyAsync(st.fp8_scalars.get(), values.data(), st.fp8_scalars.bytes(),
                                cudaMemcpyHostToDevice, stream));
  for (std::size_t i = 0; i < scales; ++i)
    tensors.push_back({ag::kFp8ScaleUids[i], st.fp8_scalars.get() + i * kFp8Stride});
  tensors.push_back({ag::kAmaxS, st.fp8_scalars.get() + scales * kFp8Stride});
  tensors.push_back({ag::kAmaxO, st.fp8_scalars.get() + (scales + 1) * kFp8Stride});
}

// The fp8 forward's amax outputs as its last execute left them.
void read_fp8_forward_amax(AttentionState& st, cudaStream_t stream) {
  const std::size_t amax = std::size(kFp8ScaleValues) * kFp8Stride;
  TR_CUDA_CHECK(cudaMemcpyAsync(&st.amax_s, st.fp8_scalars.get() + amax, sizeof(float),
                                cudaMemcpyDeviceToHost, stream));
  TR_CUDA_CHECK(cudaMemcpyAsync(&st.amax_o, st.fp8_scalars.get() + amax + kFp8Stride, sizeof(float),
                                cudaMemcpyDeviceToHost, stream));
}

// The fp8 backward's scalars into `tensors`, the gradient scales at 1 until
// calibrate_fp8_backward sets them.
void bind_fp8_backward_scalars(AttentionState& st, std::vector<cg::TensorPointer>& tensors,
                               cudaStream_t stream) {
  std::vector<float>& values = st.fp8_backward_values;
  values.assign(kFp8BackwardSlots * kFp8Stride, 0.0f);
  for (std::size_t slot = 0; slot < kSlotAmaxDP; ++slot) values[slot * kFp8Stride] = 1.0f;
  values[kSlotDescaleO * kFp8Stride] = 1.0f / kAttentionFp8Scale;
  values[kSlotDescaleS * kFp8Stride] = 1.0f / kAttentionFp8Scale;
  values[kSlotScaleS * kFp8Stride] = kAttentionFp8Scale;
  st.fp8_backward_scalars = DeviceBuffer<float>(values.size());
  TR_CUDA_CHECK(cudaMemcpyAsync(st.fp8_backward_scalars.get(), values.data(),
                                st.fp8_backward_scalars.bytes(), cudaMemcpyHostToDevice, stream));
  for (std::size_t slot = 0; slot < kFp8BackwardSlots; ++slot)
    tensors.push_back({kFp8BackwardUids[slot], st.fp8_backward_scalars.get() + slot * kFp8Stride});
}

// Copies the amax outputs into the host copy (synchronizes `stream`).
void read_fp8_backward_amax(AttentionState& st, cudaStream_t stream) {
  const std::size_t first = kSlotAmaxDP * kFp8Stride;
  TR_CUDA_CHECK(cudaMemcpyAsync(st.fp8_backward_values.data() + first,
                                st.fp8_backward_scalars.get() + first,
                                (kFp8BackwardSlots - kSlotAmaxDP) * kFp8Stride * sizeof(float),
                                cudaMemcpyDeviceToHost, stream));
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// Two calibration calls: the first (every gradient scale 1) measures dS's amax,
// which is taken before its scale and so is right at once; the second, with dS
// scaled, measures dQ's, dK's and dV's. The scales stay fixed afterwards, so
// every timed call does the same work.
void calibrate_fp8_backward(AttentionState& st, cudaStream_t stream) {
  std::vector<float>& values = st.fp8_backward_values;
  auto upload = [&] {
    TR_CUDA_CHECK(cudaMemcpyAsync(st.fp8_backward_scalars.get(), values.data(),
                                  kSlotAmaxDP * kFp8Stride * sizeof(float), cudaMemcpyHostToDevice,
                                  stream));
  };
  st.execute(stream);
  read_fp8_backward_amax(st, stream);
  const float scale_d_p = power_of_two_scale(st.fp8_backward(kSlotAmaxDP));
  values[kSlotScaleDP * kFp8Stride] = scale_d_p;
  values[kSlotDescaleDP * kFp8Stride] = 1.0f / scale_d_p;
  upload();
  st.execute(stream);
  read_fp8_backward_amax(st, stream);
  for (const auto& [scale, amax] :
       {std::pair{kSlotScaleDQ, kSlotAmaxDQ}, std::pair{kSlotScaleDK, kSlotAmaxDK},
        std::pair{kSlotScaleDV, kSlotAmaxDV}})
    values[scale * kFp8Stride] = power_of_two_scale(st.fp8_backward(amax));
  upload();
}

}  // namespace

Attention::Attention(AttentionSpec spec, std::shared_ptr<LibraryHandles> libraries)
    : problem_(std::move(spec)), libraries_(std::move(libraries)) {}

Attention::~Attention() = default;

std::string Attention::algorithm() const {
  return state_ ? state_->exe.plan->name() : std::string();
}

nlohmann::json Attention::details() const {
  if (!state_) return nlohmann::json::object();
  const Executable& exe = state_->exe;
  nlohmann::json details = cg::config_json(exe.plan->info());
  details.update({{"workspace_bytes", exe.plan->workspace_bytes()},
                  {"heuristic", exe.heuristic},
                  {"rank", exe.rank},
                  {"configs_tried", exe.configs_tried},
                  {"layout", "bshd"},
                  {"graph_operations", exe.graph->operation_count()},
                  {"scale", 1.0 / std::sqrt(static_cast<double>(spec().head_dim))}});
  if (spec().direction == AttentionDirection::bwd) details["forward_plan"] = state_->forward_plan;
  if (spec().precision == Precision::fp8 && spec().direction == AttentionDirection::bwd) {
    const AttentionState& st = *state_;
    details["fp8"] = {{"storage", "e4m3"},
                      {"forward_amax_s", st.amax_s},
                      {"forward_amax_o", st.amax_o},
                      {"descale_o", st.fp8_backward(kSlotDescaleO)},
                      {"scale_s", st.fp8_backward(kSlotScaleS)},
                      {"scale_dp", st.fp8_backward(kSlotScaleDP)},
                      {"scale_dq", st.fp8_backward(kSlotScaleDQ)},
                      {"scale_dk", st.fp8_backward(kSlotScaleDK)},
                      {"scale_dv", st.fp8_backward(kSlotScaleDV)},
                      {"amax_dp", st.fp8_backward(kSlotAmaxDP)},
                      {"amax_dq", st.fp8_backward(kSlotAmaxDQ)},
                      {"amax_dk", st.fp8_backward(kSlotAmaxDK)},
                      {"amax_dv", st.fp8_backward(kSlotAmaxDV)}};
  } else if (spec().precision == Precision::fp8) {
    details["fp8"] = {{"storage", "e4m3"},
                      {"descale_q", kFp8ScaleValues[0]},
                      {"descale_k", kFp8ScaleValues[1]},
                      {"descale_v", kFp8ScaleValues[2]},
                      {"descale_s", kFp8ScaleValues[3]},
                      {"scale_s", kFp8ScaleValues[4]},
                      {"scale_o", kFp8ScaleValues[5]},
                      {"amax_s", state_->amax_s},
                      {"amax_o", state_->amax_o}};
  }
  if (attention_needs_padding_mask(spec())) {
    // The engines work in whole 128-key tiles: the keys past seq_kv in the last
    // tile are masked work the Tensor-Core counters show above the analytic count.
    const std::int64_t keys = spec().key_length();
    const std::int64_t tiles = (keys + kAttentionBwdSeqKvMultiple - 1) / kAttentionBwdSeqKvMultiple;
    details["padding_mask"] = {
        {"seq_len_q", spec().seq_q},
        {"seq_len_kv", keys},
        {"key_tile", kAttentionBwdSeqKvMultiple},
        {"masked_keys_in_last_tile", tiles * kAttentionBwdSeqKvMultiple - keys}};
  }
  return details;
}

void* Attention::buffer(const std::string& role) const {
  if (!state_) return nullptr;
  const AttentionState& st = *state_;
  if (role == "q") return st.q.get();
  if (role == "k") return st.k.get();
  if (role == "v") return st.v.get();
  if (role == "o") return st.o.get();
  if (role == "do") return st.d_o.get();
  if (role == "stats") return st.stats.get();
  if (role == "dq") return st.d_q.get();
  if (role == "dk") return st.d_k.get();
  if (role == "dv") return st.d_v.get();
  return nullptr;
}

std::vector<DeviceTensor> Attention::inputs() const {
  return with_buffers(problem_.inputs(), [this](const std::string& role) { return buffer(role); });
}

std::vector<DeviceTensor> Attention::outputs() const {
  return with_buffers(problem_.outputs(), [this](const std::string& role) { return buffer(role); });
}

void Attention::prepare(cudaStream_t stream) {
  state_.reset();
  const AttentionSpec& s = spec();
  const bool bwd = s.direction == AttentionDirection::bwd;
  const bool fp8 = s.precision == Precision::fp8;
  if (fp8) require_fp8_attention(s);
  require_device_memory(attention_min_bytes(s));
  if (!libraries_) libraries_ = std::make_shared<LibraryHandles>();
  auto state = std::make_unique<AttentionState>();
  AttentionState& st = *state;
  st.libraries = libraries_;
  st.stream = stream;
  st.type = attention_data_type(s);
  st.use_stream(stream);

  // Random operands in [-1, 1), never all zeros; outputs filled too, so nothing
  // reads uninitialised memory.
  std::uint32_t seed = 0xa77e0001u;
  const auto q_count = static_cast<std::size_t>(attention_q_elements(s));
  const auto kv_count = static_cast<std::size_t>(attention_kv_elements(s));
  const auto row_count = static_cast<std::size_t>(attention_stats_elements(s));
  auto filled = [&](DeviceBuffer<std::byte>& buffer, std::size_t count) {
    buffer = DeviceBuffer<std::byte>(count * element_bytes(st.type));
    fill_random(buffer.get(), count, st.type, seed++, stream);
  };
  filled(st.q, q_count);
  filled(st.k, kv_count);
  filled(st.v, kv_count);
  filled(st.o, q_count);

  if (bwd) {
    st.stats = DeviceBuffer<float>(row_count);
    // O and the statistics of a training forward pass on the same operands.
    Executable forward;
    forward.graph = ag::make_forward(st.handle(), s, /*with_stats=*/true);
    choose_plan(forward);
    std::vector<cg::TensorPointer> forward_tensors = {{ag::kQ, st.q.get()},
                                                      {ag::kK, st.k.get()},
                                                      {ag::kV, st.v.get()},
                                                      {ag::kO, st.o.get()},
                                                      {ag::kStats, st.stats.get()}};
    if (fp8) bind_fp8_forward_scalars(st, forward_tensors, stream);
    bind(forward, std::move(forward_tensors));
    cg::execute(st.handle(), *forward.plan, *forward.pack);
    if (fp8) read_fp8_forward_amax(st, stream);
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
    st.forward_plan = forward.plan->name();

    filled(st.d_o, q_count);
    filled(st.d_q, q_count);
    filled(st.d_k, kv_count);
    filled(st.d_v, kv_count);
    std::vector<cg::TensorPointer> tensors = {
        {ag::kQ, st.q.get()},    {ag::kK, st.k.get()},    {ag::kV, st.v.get()},
        {ag::kO, st.o.get()},    {ag::kDO, st.d_o.get()}, {ag::kStats, st.stats.get()},
        {ag::kDQ, st.d_q.get()}, {ag::kDK, st.d_k.get()}, {ag::kDV, st.d_v.get()}};
    if (fp8) {
      bind_fp8_backward_scalars(st, tensors, stream);
    } else {
      // The 16-bit graph's Delta and dQ accumulator live in memory it binds.
      st.softmax_sum = DeviceBuffer<float>(row_count);
      st.d_q_accum = DeviceBuffer<float>(q_count);
      tensors.push_back({ag::kSoftmaxSum, st.softmax_sum.get()});
      tensors.push_back({ag::kDQAccum, st.d_q_accum.get()});
    }
    if (attention_needs_padding_mask(s)) {
      // Every batch item at the full lengths: the mask only tells the engines
      // where the last key tile ends.
      const auto batch = static_cast<std::size_t>(s.batch);
      st.seq_kv_offset = (batch + 3) / 4 * 4;
      std::vector<std::int32_t> lengths(st.seq_kv_offset + batch);
      std::fill_n(lengths.begin(), batch, static_cast<std::int32_t>(s.seq_q));
      std::fill_n(lengths.begin() + static_cast<std::ptrdiff_t>(st.seq_kv_offset), batch,
                  static_cast<std::int32_t>(s.key_length()));
      st.seq_lengths = DeviceBuffer<std::int32_t>(lengths.size());
      TR_CUDA_CHECK(cudaMemcpyAsync(st.seq_lengths.get(), lengths.data(), st.seq_lengths.bytes(),
                                    cudaMemcpyHostToDevice, stream));
      tensors.push_back({ag::kSeqLenQ, st.seq_lengths.get()});
      tensors.push_back({ag::kSeqLenKv, st.seq_lengths.get() + st.seq_kv_offset});
    }
    st.exe.graph = ag::make_backward(st.handle(), s);
    choose_plan(st.exe);
    bind(st.exe, std::move(tensors));
    if (fp8) calibrate_fp8_backward(st, stream);
  } else {
    std::vector<cg::TensorPointer> tensors = {
        {ag::kQ, st.q.get()}, {ag::kK, st.k.get()}, {ag::kV, st.v.get()}, {ag::kO, st.o.get()}};
    if (fp8) bind_fp8_forward_scalars(st, tensors, stream);
    st.exe.graph = ag::make_forward(st.handle(), s, /*with_stats=*/false);
    choose_plan(st.exe);
    bind(st.exe, std::move(tensors));
  }

  // One call now: an execution failure surfaces here, and lazily loaded kernels
  // exist before run() is timed or captured into a CUDA graph.
  st.execute(stream);
  if (fp8 && bwd) read_fp8_backward_amax(st, stream);
  if (fp8 && !bwd) read_fp8_forward_amax(st, stream);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  state_ = std::move(state);
}

void Attention::run(cudaStream_t stream) {
  if (!state_) throw std::logic_error("attention: run() before a successful prepare()");
  state_->execute(stream);
}

CheckResult Attention::check() {
  if (!state_) throw std::logic_error("attention: check() before a successful prepare()");
  const AttentionState& st = *state_;
  const AttentionSpec& s = spec();
  const ref::Geometry g(s);
  const auto q_count = static_cast<std::size_t>(attention_q_elements(s));
  const auto kv_count = static_cast<std::size_t>(attention_kv_elements(s));
  const bool fwd = s.direction == AttentionDirection::fwd;
  // The outputs start as NaN (0xFF bytes: NaN in fp16, bf16 and e4m3), so an
  // element the call does not write is seen: O forward; dQ, dK, dV backward (which
  // reads O: it keeps the forward's).
  const auto fill_nan = [&](const DeviceBuffer<std::byte>& buffer) {
    TR_CUDA_CHECK(cudaMemsetAsync(buffer.get(), 0xFF, buffer.bytes(), st.stream));
  };
  if (fwd) {
    fill_nan(st.o);
  } else {
    fill_nan(st.d_q);
    fill_nan(st.d_k);
    fill_nan(st.d_v);
  }
  run(st.stream);
  // fp8: Q, K, V dequantised by their descales (1), O by 1 / scale_O: the
  // reference sees the values the engine was given.
  const HostTensor q(st.q.get(), q_count, st.type, st.stream, kFp8ScaleValues[0]);
  const HostTensor k(st.k.get(), kv_count, st.type, st.stream, kFp8ScaleValues[1]);
  const HostTensor v(st.v.get(), kv_count, st.type, st.stream, kFp8ScaleValues[2]);
  const HostTensor o(st.o.get(), q_count, st.type, st.stream,
                     s.precision == Precision::fp8 ? 1.0 / kFp8ScaleValues[5] : 1.0);

  const std::vector<std::int64_t> batches = evenly_spaced(g.b, 2);
  const std::vector<std::int64_t> query_rows = evenly_spaced(g.sq, kAttentionCheckedRows);
  CheckResult result;
  result.tolerance =
      s.precision == Precision::fp8 ? kAttentionFp8Tolerance : relative_tolerance(s.precision);
  std::string per_tensor;
  if (fwd) {
    TR_CUDA_CHECK(cudaStreamSynchronize(st.stream));
    Compared out;
    for (std::int64_t batch : batches)
      for (std::int64_t head : evenly_spaced(g.h, 2))
        for (std::int64_t row : query_rows)
          out.add(o, g, false, batch, row, head, ref::output_row(g, q, k, v, batch, head, row).o);
    // Every O is a convex mix of V's rows: |O| <= max |V| up to the rounding the
    // tolerance allows. Over the whole output: the elements not written (still
    // NaN), the rows beyond that bound, and the row of the largest |O|, checked
    // against the reference too: a wrong row (a mask or tile edge the sampled
    // rows miss) tends to stand out there.
    double largest_v = 0;
    for (std::size_t i = 0; i < kv_count; ++i) largest_v = std::max(largest_v, std::abs(v(i)));
    const ref::WholeOutput whole =
        ref::scan_whole_output(o, q_count, g, g.sq, g.h, largest_v * (1 + result.tolerance));
    const std::int64_t batch = whole.batch, row = whole.row, head = whole.head;
    out.add(o, g, false, batch, row, head, ref::output_row(g, q, k, v, batch, head, row).o);
    result.relative_error = relative_error(out.library, out.reference);
    result.elements = out.library.size();
    result.method = "host reference (double), O of " + std::to_string(query_rows.size()) +
                    " query rows x first/last head x first/last batch and the row of the largest "
                    "|O| (batch " +
                    std::to_string(batch) + ", head " + std::to_string(head) + ", row " +
                    std::to_string(row) + ")";
    // A row beyond the bound fails by itself: the row of the largest |O| is among
    // those compared, and no reference row exceeds max |V|. Elements left NaN make
    // the output not finite.
    if (whole.unwritten > 0) result.relative_error = std::numeric_limits<double>::infinity();
    if (whole.unwritten > 0 || !whole.rows_beyond.empty()) {
      result.method +=
          "; of all " + std::to_string(q_count / static_cast<std::size_t>(g.d)) + " rows of O, " +
          std::to_string(whole.rows_beyond.size()) +
          " beyond max |V| = " + std::to_string(largest_v) + " (first: " +
          (whole.rows_beyond.empty() ? "-" : std::to_string(*whole.rows_beyond.begin())) +
          " as (batch x seq_q + row) x heads + head) and " + std::to_string(whole.unwritten) +
          " elements not written";
    }
    if (s.precision == Precision::fp8)
      per_tensor = " (fp8 e4m3: amax_S " + std::to_string(st.amax_s) + ", amax_O " +
                   std::to_string(st.amax_o) + ")";
  } else {
    // fp8: dO as drawn; the gradients by 1 / their calibrated scales.
    const bool fp8 = s.precision == Precision::fp8;
    auto descale = [&](Fp8BackwardSlot scale) { return fp8 ? 1.0 / st.fp8_backward(scale) : 1.0; };
    const HostTensor d_o(st.d_o.get(), q_count, st.type, st.stream);
    const HostTensor d_q(st.d_q.get(), q_count, st.type, st.stream, descale(kSlotScaleDQ));
    const HostTensor d_k(st.d_k.get(), kv_count, st.type, st.stream, descale(kSlotScaleDK));
    const HostTensor d_v(st.d_v.get(), kv_count, st.type, st.stream, descale(kSlotScaleDV));
    const HostFloats stats(st.stats.get(), static_cast<std::size_t>(attention_stats_elements(s)),
                           st.stream);
    TR_CUDA_CHECK(cudaStreamSynchronize(st.stream));
    const ref::BackwardInputs<HostTensor, HostFloats> in{q, k, v, o, d_o, stats};
    Compared dq, dk, dv;
    const std::vector<std::int64_t> key_rows = evenly_spaced(g.skv, kAttentionCheckedRows);
    for (std::int64_t batch : batches) {
      for (std::int64_t head : evenly_spaced(g.h, 2))
        for (std::int64_t row : query_rows)
          dq.add(d_q, g, false, batch, row, head, ref::d_q_row(g, in, batch, head, row));
      for (std::int64_t kv_head : evenly_spaced(g.hk, 2))
        for (std::int64_t row : key_rows) {
          const ref::KeyRows expected = ref::key_rows(g, in, batch, kv_head, row);
          dk.add(d_k, g, true, batch, row, kv_head, expected.d_k);
          dv.add(d_v, g, true, batch, row, kv_head, expected.d_v);
        }
    }
    // Over each whole gradient: the elements not written, and the row of its
    // largest |element| checked against the reference too.
    const ref::WholeOutput whole_dq = ref::scan_whole_output(d_q, q_count, g, g.sq, g.h, 0);
    const ref::WholeOutput whole_dk = ref::scan_whole_output(d_k, kv_count, g, g.skv, g.hk, 0);
    const ref::WholeOutput whole_dv = ref::scan_whole_output(d_v, kv_count, g, g.skv, g.hk, 0);
    dq.add(d_q, g, false, whole_dq.batch, whole_dq.row, whole_dq.head,
           ref::d_q_row(g, in, whole_dq.batch, whole_dq.head, whole_dq.row));
    dk.add(d_k, g, true, whole_dk.batch, whole_dk.row, whole_dk.head,
           ref::key_rows(g, in, whole_dk.batch, whole_dk.head, whole_dk.row).d_k);
    dv.add(d_v, g, true, whole_dv.batch, whole_dv.row, whole_dv.head,
           ref::key_rows(g, in, whole_dv.batch, whole_dv.head, whole_dv.row).d_v);
    const double errors[] = {relative_error(dq.library, dq.reference),
                             relative_error(dk.library, dk.reference),
                             relative_error(dv.library, dv.reference)};
    result.relative_error = std::max({errors[0], errors[1], errors[2]});
    if (std::isnan(errors[0]) || std::isnan(errors[1]) || std::isnan(errors[2]))
      result.relative_error = std::numeric_limits<double>::quiet_NaN();
    result.elements = dq.library.size() + dk.library.size() + dv.library.size();
    result.method = "host reference (double), dQ of " + std::to_string(query_rows.size()) +
                    " query rows, dK and dV of " + std::to_string(key_rows.size()) +
                    " key rows x first/last head x first/last batch and the row of each one's "
                    "largest |element|, from the inputs' O and statistics";
    const std::size_t unwritten = whole_dq.unwritten + whole_dk.unwritten + whole_dv.unwritten;
    if (unwritten > 0) {
      result.relative_error = std::numeric_limits<double>::infinity();
      result.method += "; elements not written: dQ " + std::to_string(whole_dq.unwritten) +
                       ", dK " + std::to_string(whole_dk.unwritten) + ", dV " +
                       std::to_string(whole_dv.unwritten);
    }
    per_tensor = " (dQ " + std::to_string(errors[0]) + ", dK " + std::to_string(errors[1]) +
                 ", dV " + std::to_string(errors[2]) + ")";
  }
  judge(result);
  result.detail += per_tensor + " of " + algorithm();
  return result;
}

}  // namespace timeroof
