#include "sweeps/attention.hpp"

#include <cuda_fp16.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/check_cudnn.hpp"
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

// A stored fp16 / bf16 tensor copied to the host, read as double.
class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(const void* device, std::size_t count, DataType type, cudaStream_t stream)
      : raw_(count), bf16_(type == DataType::bf16) {
    TR_CUDA_CHECK(cudaMemcpyAsync(raw_.data(), device, count * sizeof(std::uint16_t),
                                  cudaMemcpyDeviceToHost, stream));
  }
  double operator()(std::size_t index) const {
    const std::uint16_t bits = raw_[index];
    if (bf16_) {
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
  std::vector<std::uint16_t> raw_;
  bool bf16_ = false;
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

}  // namespace

class AttentionState {
 public:
  std::shared_ptr<LibraryHandles> libraries;
  cudaStream_t stream = nullptr;  // the prepare() stream: check() uses it
  DataType type = DataType::fp16;
  DeviceBuffer<std::byte> q, k, v, o, d_o, d_q, d_k, d_v;
  DeviceBuffer<float> stats, softmax_sum, d_q_accum;
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
    bind(forward, {{ag::kQ, st.q.get()},
                   {ag::kK, st.k.get()},
                   {ag::kV, st.v.get()},
                   {ag::kO, st.o.get()},
                   {ag::kStats, st.stats.get()}});
    cg::execute(st.handle(), *forward.plan, *forward.pack);
    TR_CUDA_CHECK(cudaStreamSynchronize(stream));
    st.forward_plan = forward.plan->name();

    filled(st.d_o, q_count);
    filled(st.d_q, q_count);
    filled(st.d_k, kv_count);
    filled(st.d_v, kv_count);
    st.softmax_sum = DeviceBuffer<float>(row_count);
    st.d_q_accum = DeviceBuffer<float>(q_count);
    st.exe.graph = ag::make_backward(st.handle(), s);
    choose_plan(st.exe);
    bind(st.exe, {{ag::kQ, st.q.get()},
                  {ag::kK, st.k.get()},
                  {ag::kV, st.v.get()},
                  {ag::kO, st.o.get()},
                  {ag::kDO, st.d_o.get()},
                  {ag::kStats, st.stats.get()},
                  {ag::kDQ, st.d_q.get()},
                  {ag::kDK, st.d_k.get()},
                  {ag::kDV, st.d_v.get()},
                  {ag::kSoftmaxSum, st.softmax_sum.get()},
                  {ag::kDQAccum, st.d_q_accum.get()}});
  } else {
    st.exe.graph = ag::make_forward(st.handle(), s, /*with_stats=*/false);
    choose_plan(st.exe);
    bind(st.exe,
         {{ag::kQ, st.q.get()}, {ag::kK, st.k.get()}, {ag::kV, st.v.get()}, {ag::kO, st.o.get()}});
  }

  // One call now: an execution failure surfaces here, and lazily loaded kernels
  // exist before run() is timed or captured into a CUDA graph.
  st.execute(stream);
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
  run(st.stream);
  const ref::Geometry g(s);
  const auto q_count = static_cast<std::size_t>(attention_q_elements(s));
  const auto kv_count = static_cast<std::size_t>(attention_kv_elements(s));
  const HostTensor q(st.q.get(), q_count, st.type, st.stream);
  const HostTensor k(st.k.get(), kv_count, st.type, st.stream);
  const HostTensor v(st.v.get(), kv_count, st.type, st.stream);
  const HostTensor o(st.o.get(), q_count, st.type, st.stream);

  const std::vector<std::int64_t> batches = evenly_spaced(g.b, 2);
  const std::vector<std::int64_t> query_rows = evenly_spaced(g.sq, kAttentionCheckedRows);
  CheckResult result;
  result.tolerance = relative_tolerance(s.precision);
  std::string per_tensor;
  if (s.direction == AttentionDirection::fwd) {
    TR_CUDA_CHECK(cudaStreamSynchronize(st.stream));
    Compared out;
    for (std::int64_t batch : batches)
      for (std::int64_t head : evenly_spaced(g.h, 2))
        for (std::int64_t row : query_rows)
          out.add(o, g, false, batch, row, head, ref::output_row(g, q, k, v, batch, head, row).o);
    result.relative_error = relative_error(out.library, out.reference);
    result.elements = out.library.size();
    result.method = "host reference (double), O of " + std::to_string(query_rows.size()) +
                    " query rows x first/last head x first/last batch";
  } else {
    const HostTensor d_o(st.d_o.get(), q_count, st.type, st.stream);
    const HostTensor d_q(st.d_q.get(), q_count, st.type, st.stream);
    const HostTensor d_k(st.d_k.get(), kv_count, st.type, st.stream);
    const HostTensor d_v(st.d_v.get(), kv_count, st.type, st.stream);
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
    const double errors[] = {relative_error(dq.library, dq.reference),
                             relative_error(dk.library, dk.reference),
                             relative_error(dv.library, dv.reference)};
    result.relative_error = std::max({errors[0], errors[1], errors[2]});
    if (std::isnan(errors[0]) || std::isnan(errors[1]) || std::isnan(errors[2]))
      result.relative_error = std::numeric_limits<double>::quiet_NaN();
    result.elements = dq.library.size() + dk.library.size() + dv.library.size();
    result.method = "host reference (double), dQ of " + std::to_string(query_rows.size()) +
                    " query rows, dK and dV of " + std::to_string(key_rows.size()) +
                    " key rows x first/last head x first/last batch, from the inputs' O and "
                    "statistics";
    per_tensor = " (dQ " + std::to_string(errors[0]) + ", dK " + std::to_string(errors[1]) +
                 ", dV " + std::to_string(errors[2]) + ")";
  }
  judge(result);
  result.detail += per_tensor + " of " + algorithm();
  return result;
}

}  // namespace timeroof
