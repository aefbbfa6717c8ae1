#include "kernels/cublas_reference.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "core/error.hpp"
#include "gpu/check_cublas.hpp"
#include "kernels/ceiling_support.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/measure.hpp"

namespace timeroof {

LtHandle::LtHandle() {
  cublasLtHandle_t h = nullptr;
  TR_CUBLAS_CHECK(cublasLtCreate(&h));
  handle_ = UniqueHandle<cublasLtHandle_t, LtHandleRelease>(h);
}

LtMatmulDesc::LtMatmulDesc(cublasComputeType_t compute, cudaDataType_t scale) {
  cublasLtMatmulDesc_t d = nullptr;
  TR_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d, compute, scale));
  desc_ = UniqueHandle<cublasLtMatmulDesc_t, LtMatmulDescRelease>(d);
}

LtMatrixLayout::LtMatrixLayout(cudaDataType_t type, std::uint64_t rows, std::uint64_t cols,
                               std::int64_t ld) {
  cublasLtMatrixLayout_t l = nullptr;
  TR_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld));
  layout_ = UniqueHandle<cublasLtMatrixLayout_t, LtMatrixLayoutRelease>(l);
}

LtPreference::LtPreference(std::size_t max_workspace_bytes) {
  cublasLtMatmulPreference_t p = nullptr;
  TR_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p));
  preference_ = UniqueHandle<cublasLtMatmulPreference_t, LtPreferenceRelease>(p);
  const std::uint64_t bytes = max_workspace_bytes;
  TR_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &bytes, sizeof bytes));
}

LibraryGemmTypes library_gemm_types(Precision type) {
  LibraryGemmTypes t;
  switch (type) {
    case Precision::fp16:
      t = {DataType::fp16,
           DataType::fp16,
           CUDA_R_16F,
           CUDA_R_16F,
           CUDA_R_32F,
           CUBLAS_COMPUTE_32F,
           "f16 x f16 -> f16, fp32 compute"};
      break;
    case Precision::bf16:
      t = {DataType::bf16,
           DataType::bf16,
           CUDA_R_16BF,
           CUDA_R_16BF,
           CUDA_R_32F,
           CUBLAS_COMPUTE_32F,
           "bf16 x bf16 -> bf16, fp32 compute"};
      break;
    case Precision::tf32:
      t = {DataType::fp32,
           DataType::fp32,
           CUDA_R_32F,
           CUDA_R_32F,
           CUDA_R_32F,
           CUBLAS_COMPUTE_32F_FAST_TF32,
           "f32 x f32 -> f32, tf32 compute (COMPUTE_32F_FAST_TF32)"};
      break;
    case Precision::fp8:
      t = {DataType::fp8_e4m3,
           DataType::bf16,
           CUDA_R_8F_E4M3,
           CUDA_R_16BF,
           CUDA_R_32F,
           CUBLAS_COMPUTE_32F,
           "e4m3 x e4m3 -> bf16, fp32 compute, fast accumulation, unit scales"};
      break;
    case Precision::int8:
      t = {DataType::int8,
           DataType::int32,
           CUDA_R_8I,
           CUDA_R_32I,
           CUDA_R_32I,
           CUBLAS_COMPUTE_32I,
           "s8 x s8 -> s32, int32 compute"};
      break;
    case Precision::fp64:
      t = {DataType::fp64,
           DataType::fp64,
           CUDA_R_64F,
           CUDA_R_64F,
           CUDA_R_64F,
           CUBLAS_COMPUTE_64F,
           "f64 x f64 -> f64, fp64 compute"};
      break;
    case Precision::fp32:  // not a Tensor-Core operand type (tf32 is)
      break;
  }
  return t;
}

namespace {

// alpha = 1 and beta = 0 in the scale type.
void write_scalar(std::array<unsigned char, 8>& storage, cudaDataType_t type, int value) {
  storage.fill(0);
  if (type == CUDA_R_64F) {
    const double v = value;
    std::memcpy(storage.data(), &v, sizeof v);
  } else if (type == CUDA_R_32I) {
    const std::int32_t v = value;
    std::memcpy(storage.data(), &v, sizeof v);
  } else {
    const float v = static_cast<float>(value);
    std::memcpy(storage.data(), &v, sizeof v);
  }
}

}  // namespace

LtGemm::LtGemm(const LtHandle& handle, Precision type, int m, int n, int k)
    : handle_(handle),
      types_(library_gemm_types(type)),
      m_(m),
      n_(n),
      k_(k),
      desc_(types_.compute, types_.scale_cuda),
      a_layout_(types_.input_cuda, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(m), k),
      b_layout_(types_.input_cuda, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(n), k),
      d_layout_(types_.output_cuda, static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(n),
                m) {
  desc_.set(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  desc_.set(CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  write_scalar(alpha_, types_.scale_cuda, 1);
  write_scalar(beta_, types_.scale_cuda, 0);
  if (type == Precision::fp8) {
    unit_scale_ = DeviceBuffer<float>(1);
    const float one = 1.0f;
    TR_CUDA_CHECK(cudaMemcpy(unit_scale_.get(), &one, sizeof one, cudaMemcpyHostToDevice));
    const void* scale = unit_scale_.get();
    desc_.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale);
    desc_.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale);
    const std::int8_t fast_accumulation = 1;  // what speed-seeking fp8 users run
    desc_.set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accumulation);
  }
}

std::vector<cublasLtMatmulHeuristicResult_t> LtGemm::algorithms(int count,
                                                                std::size_t workspace_bytes) const {
  const LtPreference preference(workspace_bytes);
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(count));
  int returned = 0;
  // C and D share one layout (beta = 0, C is never read).
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle_.get(), desc_.get(), a_layout_.get(), b_layout_.get(), d_layout_.get(),
      d_layout_.get(), preference.get(), count, results.data(), &returned);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return {};
  TR_CUBLAS_CHECK(status);
  results.resize(static_cast<std::size_t>(returned));
  results.erase(std::remove_if(results.begin(), results.end(),
                               [](const cublasLtMatmulHeuristicResult_t& r) {
                                 return r.state != CUBLAS_STATUS_SUCCESS;
                               }),
                results.end());
  return results;
}

cublasStatus_t LtGemm::run(const cublasLtMatmulAlgo_t& algorithm, const void* a, const void* b,
                           void* d, void* workspace, std::size_t workspace_bytes,
                           cudaStream_t stream) const {
  return cublasLtMatmul(handle_.get(), desc_.get(), alpha_.data(), a, a_layout_.get(), b,
                        b_layout_.get(), beta_.data(), d, d_layout_.get(), d, d_layout_.get(),
                        &algorithm, workspace, workspace_bytes, stream);
}

namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{64} << 20;

int algorithm_config(const cublasLtMatmulAlgo_t& algorithm,
                     cublasLtMatmulAlgoConfigAttributes_t key) {
  int value = -1;
  std::size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algorithm, key, &value, sizeof value, &written) !=
      CUBLAS_STATUS_SUCCESS)
    return -1;
  return value;
}

// Device operands of one GEMM, filled with random values once.
struct GemmOperands {
  DeviceBuffer<unsigned char> a, b, d, workspace;
  GemmOperands(const LtGemm& gemm, cudaStream_t stream)
      : a(static_cast<std::size_t>(gemm.k()) * gemm.m() * element_bytes(gemm.types().input)),
        b(static_cast<std::size_t>(gemm.k()) * gemm.n() * element_bytes(gemm.types().input)),
        d(static_cast<std::size_t>(gemm.m()) * gemm.n() * element_bytes(gemm.types().output)),
        workspace(kWorkspaceBytes) {
    fill_random(a.get(), static_cast<std::size_t>(gemm.k()) * gemm.m(), gemm.types().input, 0xa11ce,
                stream);
    fill_random(b.get(), static_cast<std::size_t>(gemm.k()) * gemm.n(), gemm.types().input, 0xb0b,
                stream);
  }
  cublasStatus_t run(const LtGemm& gemm, const cublasLtMatmulAlgo_t& algorithm,
                     cudaStream_t stream) const {
    return gemm.run(algorithm, a.get(), b.get(), d.get(), workspace.get(), workspace.bytes(),
                    stream);
  }
};

// Median seconds of `trials` GEMMs with `algorithm`, or nullopt if it refuses.
std::optional<double> try_algorithm(const LtGemm& gemm, const GemmOperands& operands,
                                    const cublasLtMatmulAlgo_t& algorithm, int trials,
                                    cudaStream_t stream) {
  if (operands.run(gemm, algorithm, stream) != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> seconds;
  for (int i = 0; i < trials; ++i) {
    Event start, stop;
    start.record(stream);
    if (operands.run(gemm, algorithm, stream) != CUBLAS_STATUS_SUCCESS) return std::nullopt;
    stop.record(stream);
    stop.synchronize();
    seconds.push_back(stop.seconds_since(start));
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

void measure_library_type(const CeilingRequest& request, Precision type, CeilingResults& out) {
  const std::string name = ceiling::library(type);
  const cudaStream_t stream = request.stream;
  const int size = request.quick ? 4096 : 8192;
  const LtHandle handle;
  const LtGemm gemm(handle, type, size, size, size);
  const auto candidates = gemm.algorithms(request.quick ? 4 : 8, kWorkspaceBytes);
  if (candidates.empty()) {
    out.skipped.push_back({name, "cuBLASLt has no algorithm for " + gemm.types().description +
                                     " TN GEMM on this GPU"});
    return;
  }
  const GemmOperands operands(gemm, stream);
  const int trials = request.quick ? 2 : 5;
  std::size_t best = candidates.size();
  double best_seconds = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto seconds = try_algorithm(gemm, operands, candidates[i].algo, trials, stream);
    if (seconds && *seconds < best_seconds) {
      best_seconds = *seconds;
      best = i;
    }
  }
  if (best == candidates.size()) {
    out.skipped.push_back(
        {name, "every cuBLASLt algorithm for " + gemm.types().description + " refused to run",
         true});
    return;
  }
  const cublasLtMatmulAlgo_t& algorithm = candidates[best].algo;
  const Measurement m =
      measure_on_stream([&](cudaStream_t s) { TR_CUBLAS_CHECK(operands.run(gemm, algorithm, s)); },
                        stream, request.timing());
  const std::string method =
      "cublasLtMatmul " + gemm.types().description + ", M=N=K=" + std::to_string(size) +
      ", TN (A transposed, column-major), random inputs, heuristic algorithm #" +
      std::to_string(best + 1) + " of " + std::to_string(candidates.size()) +
      " (fastest in a trial; algo id " +
      std::to_string(algorithm_config(algorithm, CUBLASLT_ALGO_CONFIG_ID)) + ", tile id " +
      std::to_string(algorithm_config(algorithm, CUBLASLT_ALGO_CONFIG_TILE_ID)) + ", stages id " +
      std::to_string(algorithm_config(algorithm, CUBLASLT_ALGO_CONFIG_STAGES_ID)) +
      "), workspace 64 MiB";
  out.ceilings.push_back(
      make_ceiling(name, CeilingKind::compute, "FLOP/s", gemm.flops(), m, method));
}

}  // namespace

void measure_library_ceilings(const CeilingRequest& request, CeilingResults& out) {
  ceiling_support::select_device_and_count_sms(request);
  const int cc = request.gpu.cc_major * 10 + request.gpu.cc_minor;
  for (const Precision type : ceiling::kTensorPrecisions) {
    const std::string name = ceiling::library(type);
    if (!request.wanted(name)) continue;
    if (cc < tensor_type_min_cc(type)) {
      const int min_cc = tensor_type_min_cc(type);
      out.skipped.push_back(
          {name, std::string(to_string(type)) + " GEMMs need compute capability " +
                     std::to_string(min_cc / 10) + "." + std::to_string(min_cc % 10) +
                     "+; this GPU is " + std::to_string(request.gpu.cc_major) + "." +
                     std::to_string(request.gpu.cc_minor)});
      continue;
    }
    measure_library_type(request, type, out);
  }
}

std::vector<double> run_library_gemm(Precision type, int m, int n, int k,
                                     const std::vector<double>& a, const std::vector<double>& b) {
  const auto mk = static_cast<std::size_t>(m) * k;
  const auto kn = static_cast<std::size_t>(k) * n;
  const auto mn = static_cast<std::size_t>(m) * n;
  if (a.size() != mk || b.size() != kn)
    throw usage_error("run_library_gemm: A must be m x k and B k x n");
  const LtHandle handle;
  const LtGemm gemm(handle, type, m, n, k);
  const auto candidates = gemm.algorithms(1, kWorkspaceBytes);
  if (candidates.empty())
    throw environment_error("cuBLASLt has no algorithm for " + gemm.types().description);
  // Row-major A (m x k) is column-major k x m as is; B goes in as B^T (k x n column-major).
  std::vector<double> b_columns(kn);
  for (int l = 0; l < k; ++l)
    for (int j = 0; j < n; ++j)
      b_columns[static_cast<std::size_t>(j) * k + l] = b[static_cast<std::size_t>(l) * n + j];
  DeviceBuffer<double> staging(std::max(mk, std::max(kn, mn)));
  DeviceBuffer<unsigned char> a_device(mk * element_bytes(gemm.types().input));
  DeviceBuffer<unsigned char> b_device(kn * element_bytes(gemm.types().input));
  DeviceBuffer<unsigned char> d_device(mn * element_bytes(gemm.types().output));
  DeviceBuffer<unsigned char> workspace(kWorkspaceBytes);
  const cudaStream_t stream = nullptr;
  TR_CUDA_CHECK(cudaMemcpy(staging.get(), a.data(), mk * sizeof(double), cudaMemcpyHostToDevice));
  convert_from_double(staging.get(), a_device.get(), mk, gemm.types().input, stream);
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  TR_CUDA_CHECK(
      cudaMemcpy(staging.get(), b_columns.data(), kn * sizeof(double), cudaMemcpyHostToDevice));
  convert_from_double(staging.get(), b_device.get(), kn, gemm.types().input, stream);
  TR_CUBLAS_CHECK(gemm.run(candidates.front().algo, a_device.get(), b_device.get(), d_device.get(),
                           workspace.get(), workspace.bytes(), stream));
  convert_to_double(d_device.get(), staging.get(), mn, gemm.types().output, stream);
  std::vector<double> d_columns(mn);
  TR_CUDA_CHECK(
      cudaMemcpy(d_columns.data(), staging.get(), mn * sizeof(double), cudaMemcpyDeviceToHost));
  std::vector<double> d(mn);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      d[static_cast<std::size_t>(i) * n + j] = d_columns[static_cast<std::size_t>(j) * m + i];
  return d;
}

}  // namespace timeroof
