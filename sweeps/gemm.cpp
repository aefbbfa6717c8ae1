#include "sweeps/gemm.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/check_cublas.hpp"
#include "gpu/handles.hpp"
#include "kernels/cublas_reference.hpp"
#include "kernels/device_fill.hpp"
#include "kernels/tensor_types.hpp"
#include "sweeps/cudnn_support.hpp"
#include "sweeps/gemm_reference.hpp"
#include "sweeps/sampling.hpp"

namespace timeroof {

namespace {

cudaDataType_t cuda_type(DataType type) {
  switch (type) {
    case DataType::fp64:
      return CUDA_R_64F;
    case DataType::fp32:
      return CUDA_R_32F;
    case DataType::fp16:
      return CUDA_R_16F;
    case DataType::bf16:
      return CUDA_R_16BF;
    case DataType::fp8_e4m3:
      return CUDA_R_8F_E4M3;
    case DataType::fp8_e5m2:
      return CUDA_R_8F_E5M2;
    case DataType::int8:
      return CUDA_R_8I;
    case DataType::int32:
      return CUDA_R_32I;
  }
  return CUDA_R_32F;
}

cublasComputeType_t compute_type(GemmInputs inputs) {
  if (inputs == GemmInputs::tf32) return CUBLAS_COMPUTE_32F_FAST_TF32;
  if (inputs == GemmInputs::int8) return CUBLAS_COMPUTE_32I;
  return CUBLAS_COMPUTE_32F;
}

// alpha and beta's type: int32 for int8 products, else fp32.
cudaDataType_t scale_type(GemmInputs inputs) {
  return inputs == GemmInputs::int8 ? CUDA_R_32I : CUDA_R_32F;
}

const char* compute_type_name(cublasComputeType_t compute) {
  switch (compute) {
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return "CUBLAS_COMPUTE_32F_FAST_TF32";
    case CUBLAS_COMPUTE_32I:
      return "CUBLAS_COMPUTE_32I";
    default:
      return "CUBLAS_COMPUTE_32F";
  }
}

cublasLtEpilogue_t lt_epilogue(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::none:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::bias:
      return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::relu:
      return CUBLASLT_EPILOGUE_RELU;
    case GemmEpilogue::gelu:
      return CUBLASLT_EPILOGUE_GELU;
    case GemmEpilogue::bias_relu:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
    case GemmEpilogue::bias_gelu:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

GemmActivation activation_of(GemmEpilogue epilogue) {
  if (epilogue == GemmEpilogue::relu || epilogue == GemmEpilogue::bias_relu)
    return GemmActivation::relu;
  if (epilogue == GemmEpilogue::gelu || epilogue == GemmEpilogue::bias_gelu)
    return GemmActivation::gelu;
  return GemmActivation::none;
}

// The configuration attributes of an algorithm, by name, in the attribute's own
// width (cuBLASLt refuses a buffer of another size).
constexpr std::pair<const char*, cublasLtMatmulAlgoConfigAttributes_t> kConfigAttributes[] = {
    {"algo", CUBLASLT_ALGO_CONFIG_ID},
    {"tile", CUBLASLT_ALGO_CONFIG_TILE_ID},
    {"stages", CUBLASLT_ALGO_CONFIG_STAGES_ID},
    {"splitk", CUBLASLT_ALGO_CONFIG_SPLITK_NUM},
    {"reduction", CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME},
    {"swizzle", CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING},
    {"custom", CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION},
    {"inner", CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID},
    {"cluster", CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID},
};

std::int64_t config_value(const cublasLtMatmulAlgo_t& algo,
                          cublasLtMatmulAlgoConfigAttributes_t attribute) {
  std::size_t size = 0;
  TR_CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, nullptr, 0, &size));
  std::uint64_t value = 0;
  if (size == 0 || size > sizeof value) return -1;
  TR_CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, size, &size));
  if (size == sizeof(std::int32_t)) {  // CUBLASLT_ALGO_CONFIG_ID is signed
    std::int32_t narrow = 0;
    std::memcpy(&narrow, &value, sizeof narrow);
    return attribute == CUBLASLT_ALGO_CONFIG_ID ? narrow : static_cast<std::uint32_t>(narrow);
  }
  return static_cast<std::int64_t>(value);
}

// fp8 GEMMs need Ada or later: a one-line refusal (the point is `unsupported`)
// naming the GPU's compute capability, before any allocation.
void require_fp8_tensor_cores(GemmInputs inputs) {
  int device = 0, major = 0, minor = 0;
  TR_CUDA_CHECK(cudaGetDevice(&device));
  TR_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TR_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const int min_cc = tensor_type_min_cc(Precision::fp8);
  if (major * 10 + minor >= min_cc) return;
  throw usage_error("gemm: precision = " + std::string(to_string(inputs)) +
                    " needs compute capability " + std::to_string(min_cc / 10) + "." +
                    std::to_string(min_cc % 10) + "+ (fp8 Tensor Cores); this GPU is " +
                    std::to_string(major) + "." + std::to_string(minor) +
                    "; allowed here: fp32, tf32, fp16, bf16, int8");
}

// Floats between the A and B scales in their buffer: 16 bytes.
constexpr std::size_t kScaleStride = 4;

// A column-major layout of `batch` rows x cols matrices stored one after another.
LtMatrixLayout batched_layout(DataType type, std::int64_t rows, std::int64_t cols,
                              std::int64_t batch) {
  LtMatrixLayout layout(cuda_type(type), static_cast<std::uint64_t>(rows),
                        static_cast<std::uint64_t>(cols), rows);
  if (batch > 1) {
    const auto count = static_cast<std::int32_t>(batch);
    const std::int64_t stride = rows * cols;
    TR_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        layout.get(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    TR_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        layout.get(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return layout;
}

}  // namespace

// Everything prepare() creates; destroyed with the operator.
class GemmState {
 public:
  GemmState(const GemmSpec& gemm, cudaStream_t prepared_on)
      : spec(gemm),
        types(gemm_types(gemm.inputs)),
        stream(prepared_on),
        desc(compute_type(gemm.inputs), scale_type(gemm.inputs)),
        a_layout(batched_layout(types.a, gemm.trans_a ? gemm.k : gemm.m,
                                gemm.trans_a ? gemm.m : gemm.k, gemm.batch)),
        b_layout(batched_layout(types.b, gemm.trans_b ? gemm.n : gemm.k,
                                gemm.trans_b ? gemm.k : gemm.n, gemm.batch)),
        d_layout(batched_layout(types.d, gemm.m, gemm.n, gemm.batch)) {}

  const GemmSpec& spec;
  GemmTypes types;
  cudaStream_t stream;  // the prepare() stream: check() uses it
  cublasLtHandle_t handle = nullptr;
  LtMatmulDesc desc;
  LtMatrixLayout a_layout, b_layout, d_layout;  // C shares D's (beta = 0)
  DeviceBuffer<std::byte> a, b, d, bias, workspace;
  DeviceBuffer<float> fp8_scales;                // A's, then B's
  std::array<unsigned char, 4> alpha{}, beta{};  // in the scale type (f32 or s32)
  std::vector<cublasLtMatmulHeuristicResult_t> heuristic;
  std::size_t chosen = 0;

  const cublasLtMatmulAlgo_t& algo() const { return heuristic.at(chosen).algo; }

  void execute(cudaStream_t on) const {
    TR_CUBLAS_CHECK(cublasLtMatmul(handle, desc.get(), alpha.data(), a.get(), a_layout.get(),
                                   b.get(), b_layout.get(), beta.data(), d.get(), d_layout.get(),
                                   d.get(), d_layout.get(), &algo(), workspace.get(),
                                   workspace.bytes(), on));
  }
};

Gemm::Gemm(GemmSpec spec, std::shared_ptr<LibraryHandles> libraries)
    : problem_(std::move(spec)), libraries_(std::move(libraries)) {}

Gemm::~Gemm() = default;

std::string Gemm::algorithm() const {
  if (!state_) return {};
  std::string name = "cublasLt";
  for (const auto& [key, attribute] : kConfigAttributes)
    name += " " + std::string(key) + "=" + std::to_string(config_value(state_->algo(), attribute));
  return name;
}

nlohmann::json Gemm::details() const {
  if (!state_) return nlohmann::json::object();
  const GemmState& st = *state_;
  nlohmann::json config = nlohmann::json::object();
  for (const auto& [key, attribute] : kConfigAttributes)
    config[key] = config_value(st.algo(), attribute);
  nlohmann::json details = {
      {"heuristic_index", st.chosen},
      {"heuristic_results", st.heuristic.size()},
      {"algo_config", config},
      {"waves_count", st.heuristic.at(st.chosen).wavesCount},
      {"workspace_bytes", st.workspace.bytes()},
      {"compute_type", compute_type_name(compute_type(spec().inputs))},
      {"scale_type", scale_type(spec().inputs) == CUDA_R_32I ? "CUDA_R_32I" : "CUDA_R_32F"},
      {"algorithm_selection", spec().algo ? "fixed" : "heuristic"}};
  if (is_fp8(spec().inputs)) {
    details["fp8_scales"] = {{"a", kGemmFp8ScaleA}, {"b", kGemmFp8ScaleB}};
    details["fp8_fast_accumulation"] = false;
  }
  // NVIDIA_TF32_OVERRIDE=0 turns TF32 off in every NVIDIA library: record it.
  if (const char* tf32 = std::getenv("NVIDIA_TF32_OVERRIDE"))
    details["nvidia_tf32_override"] = tf32;
  return details;
}

void* Gemm::buffer(const std::string& role) const {
  if (!state_) return nullptr;
  return role == "a" ? state_->a.get() : state_->d.get();
}

std::vector<DeviceTensor> Gemm::inputs() const {
  return with_buffers(problem_.inputs(), [this](const std::string& role) { return buffer(role); });
}

std::vector<DeviceTensor> Gemm::outputs() const {
  return with_buffers(problem_.outputs(), [this](const std::string& role) { return buffer(role); });
}

void Gemm::prepare(cudaStream_t stream) {
  state_.reset();
  const GemmSpec& spec = problem_.spec();
  if (is_fp8(spec.inputs)) require_fp8_tensor_cores(spec.inputs);
  require_device_memory(gemm_min_bytes(spec));
  if (!libraries_) libraries_ = std::make_shared<LibraryHandles>();
  auto state = std::make_unique<GemmState>(spec, stream);
  GemmState& st = *state;
  st.handle = libraries_->cublas_lt();

  const cublasOperation_t trans_a = spec.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t trans_b = spec.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  st.desc.set(CUBLASLT_MATMUL_DESC_TRANSA, trans_a);
  st.desc.set(CUBLASLT_MATMUL_DESC_TRANSB, trans_b);
  st.desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(spec.epilogue));
  if (scale_type(spec.inputs) == CUDA_R_32I) {  // alpha and beta in the scale type
    const std::int32_t one = 1, zero = 0;
    std::memcpy(st.alpha.data(), &one, sizeof one);
    std::memcpy(st.beta.data(), &zero, sizeof zero);
  } else {
    const float one = 1, zero = 0;
    std::memcpy(st.alpha.data(), &one, sizeof one);
    std::memcpy(st.beta.data(), &zero, sizeof zero);
  }

  // Random operands, never all zeros (zeros run faster than real data); D too,
  // so nothing ever reads uninitialised memory.
  std::uint32_t seed = 0x6e770001u;
  auto filled = [&](DeviceBuffer<std::byte>& buffer, double elements, DataType type) {
    const auto count = static_cast<std::size_t>(elements);
    buffer = DeviceBuffer<std::byte>(count * element_bytes(type));
    fill_random(buffer.get(), count, type, seed++, stream);
  };
  filled(st.a, gemm_a_elements(spec), st.types.a);
  filled(st.b, gemm_b_elements(spec), st.types.b);
  filled(st.d, gemm_d_elements(spec), st.types.d);
  if (has_bias(spec.epilogue)) {
    filled(st.bias, gemm_bias_elements(spec), st.types.bias);
    const void* bias = st.bias.get();
    st.desc.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    st.desc.set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cuda_type(st.types.bias));
  }
  if (is_fp8(spec.inputs)) {
    // Each scale 16-byte aligned, as a scale in its own allocation (the fp8
    // ceiling reference's) is: with B's right after A's, cublasLtMatmul refused
    // every fp8 GEMM its heuristic had offered ("not supported", H100, cuBLAS 13).
    st.fp8_scales = DeviceBuffer<float>(2 * kScaleStride);
    std::array<float, 2 * kScaleStride> scales{};
    scales[0] = kGemmFp8ScaleA;
    scales[kScaleStride] = kGemmFp8ScaleB;
    TR_CUDA_CHECK(cudaMemcpyAsync(st.fp8_scales.get(), scales.data(), st.fp8_scales.bytes(),
                                  cudaMemcpyHostToDevice, stream));
    const float* scale_a = st.fp8_scales.get();
    const float* scale_b = st.fp8_scales.get() + kScaleStride;
    st.desc.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale_a);
    st.desc.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale_b);
  }

  const LtPreference preference(kGemmMaxWorkspaceBytes);
  std::vector<cublasLtMatmulHeuristicResult_t> results(kGemmHeuristicResults);
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      st.handle, st.desc.get(), st.a_layout.get(), st.b_layout.get(), st.d_layout.get(),
      st.d_layout.get(), preference.get(), kGemmHeuristicResults, results.data(), &returned);
  if (status != CUBLAS_STATUS_NOT_SUPPORTED) TR_CUBLAS_CHECK(status);
  results.resize(static_cast<std::size_t>(status == CUBLAS_STATUS_SUCCESS ? returned : 0));
  std::erase_if(results, [](const cublasLtMatmulHeuristicResult_t& r) {
    return r.state != CUBLAS_STATUS_SUCCESS;
  });
  if (results.empty())
    throw GpuError("cuBLAS", CUBLAS_STATUS_NOT_SUPPORTED,
                   std::string("CUBLAS_STATUS_NOT_SUPPORTED: cuBLASLt's heuristic has no "
                               "algorithm for this GEMM (precision ") +
                       to_string(spec.inputs) + ", epilogue " + to_string(spec.epilogue) +
                       ") on this GPU");
  st.heuristic = std::move(results);
  st.chosen = static_cast<std::size_t>(spec.algo.value_or(0));
  if (st.chosen >= st.heuristic.size())
    throw usage_error("gemm: algo = " + std::to_string(st.chosen) + ", but cuBLASLt's heuristic " +
                      "lists " + std::to_string(st.heuristic.size()) +
                      " algorithms for this GEMM on this GPU; allowed: heuristic or 0 .. " +
                      std::to_string(st.heuristic.size() - 1));
  st.workspace = DeviceBuffer<std::byte>(st.heuristic[st.chosen].workspaceSize);

  // One call now: an execution failure surfaces here, and lazily loaded kernels
  // exist before run() is timed or captured into a CUDA graph.
  st.execute(stream);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  state_ = std::move(state);
}

void Gemm::run(cudaStream_t stream) {
  if (!state_) throw std::logic_error("gemm: run() before a successful prepare()");
  state_->execute(stream);
}

CheckResult Gemm::check() {
  if (!state_) throw std::logic_error("gemm: check() before a successful prepare()");
  const GemmState& st = *state_;
  const GemmSpec& s = spec();
  run(st.stream);

  GemmReferenceOperands operands;
  operands.a = st.a.get();
  operands.b = st.b.get();
  operands.bias = has_bias(s.epilogue) ? st.bias.get() : nullptr;
  operands.d = st.d.get();
  operands.a_type = st.types.a;
  operands.b_type = st.types.b;
  operands.bias_type = st.types.bias;
  operands.d_type = st.types.d;
  operands.m = s.m;
  operands.n = s.n;
  operands.k = s.k;
  operands.trans_a = s.trans_a;
  operands.trans_b = s.trans_b;
  operands.scale = is_fp8(s.inputs) ? double{kGemmFp8ScaleA} * kGemmFp8ScaleB : 1.0;
  GemmSampling sampling;
  sampling.rows = evenly_spaced(s.m, kGemmCheckedRowsOrColumns);
  sampling.columns = evenly_spaced(s.n, kGemmCheckedRowsOrColumns);
  sampling.batches = evenly_spaced(s.batch, 2);
  const GemmSampledOutputs sampled =
      sample_gemm(operands, activation_of(s.epilogue), sampling, st.stream);

  CheckResult result;
  const bool every_output = static_cast<double>(sampling.count()) == gemm_d_elements(s);
  result.method = every_output
                      ? "device reference (double), every output"
                      : "device reference (double), " + std::to_string(sampling.rows.size()) +
                            " rows x " + std::to_string(sampling.columns.size()) + " columns x " +
                            std::to_string(sampling.batches.size()) + " of the batch";
  result.elements = sampling.count();
  result.relative_error = relative_error(sampled.library, sampled.reference);
  const Precision precision = gemm_precision(s.inputs);
  result.tolerance = relative_tolerance(precision);
  if (precision == Precision::fp32)
    result.tolerance = std::max(result.tolerance, long_sum_tolerance(static_cast<double>(s.k)));
  if (activation_of(s.epilogue) == GemmActivation::gelu && precision != Precision::int8)
    result.tolerance = std::max(result.tolerance, 1e-3);
  judge(result);
  result.detail += " of " + algorithm();
  return result;
}

}  // namespace timeroof
