// The library reference: the best large-GEMM rate cuBLASLt reaches per type
// (measure_library_ceilings in ceilings.hpp), and the RAII and GEMM wrapper it
// is built from. A Tensor-Core roof below the library's rate means our roof
// kernel is wrong, not the library fast.
//
// Names and types (A and B in, C = D out, compute):
//   cublaslt_fp16  f16 x f16 -> f16, fp32 compute
//   cublaslt_bf16  bf16 x bf16 -> bf16, fp32 compute
//   cublaslt_tf32  f32 x f32 -> f32, CUBLAS_COMPUTE_32F_FAST_TF32
//   cublaslt_fp8   e4m3 x e4m3 -> bf16, fp32 compute, fast accumulation (sm_89+)
//   cublaslt_int8  s8 x s8 -> s32, int32 compute
//   cublas_fp64    f64 x f64 -> f64, fp64 compute
// FLOPs per GEMM: 2 * M * N * K (int8 operations counted as FLOPs).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/check.hpp"
#include "gpu/check_cublas.hpp"
#include "gpu/handles.hpp"
#include "kernels/device_fill.hpp"
#include "kernels/tensor_types.hpp"

namespace timeroof {

// ---- move-only owners of cuBLASLt objects ----

struct LtHandleRelease {
  void operator()(cublasLtHandle_t h) const noexcept { TR_CUBLAS_WARN(cublasLtDestroy(h)); }
};
struct LtMatmulDescRelease {
  void operator()(cublasLtMatmulDesc_t d) const noexcept {
    TR_CUBLAS_WARN(cublasLtMatmulDescDestroy(d));
  }
};
struct LtMatrixLayoutRelease {
  void operator()(cublasLtMatrixLayout_t l) const noexcept {
    TR_CUBLAS_WARN(cublasLtMatrixLayoutDestroy(l));
  }
};
struct LtPreferenceRelease {
  void operator()(cublasLtMatmulPreference_t p) const noexcept {
    TR_CUBLAS_WARN(cublasLtMatmulPreferenceDestroy(p));
  }
};

class LtHandle {
 public:
  LtHandle();
  cublasLtHandle_t get() const noexcept { return handle_.get(); }

 private:
  UniqueHandle<cublasLtHandle_t, LtHandleRelease> handle_;
};

class LtMatmulDesc {
 public:
  LtMatmulDesc(cublasComputeType_t compute, cudaDataType_t scale);
  cublasLtMatmulDesc_t get() const noexcept { return desc_.get(); }
  template <typename T>
  void set(cublasLtMatmulDescAttributes_t attribute, const T& value) {
    TR_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(get(), attribute, &value, sizeof value));
  }

 private:
  UniqueHandle<cublasLtMatmulDesc_t, LtMatmulDescRelease> desc_;
};

// A column-major rows x cols matrix with leading dimension `ld`.
class LtMatrixLayout {
 public:
  LtMatrixLayout(cudaDataType_t type, std::uint64_t rows, std::uint64_t cols, std::int64_t ld);
  cublasLtMatrixLayout_t get() const noexcept { return layout_.get(); }

 private:
  UniqueHandle<cublasLtMatrixLayout_t, LtMatrixLayoutRelease> layout_;
};

class LtPreference {
 public:
  explicit LtPreference(std::size_t max_workspace_bytes);
  cublasLtMatmulPreference_t get() const noexcept { return preference_.get(); }

 private:
  UniqueHandle<cublasLtMatmulPreference_t, LtPreferenceRelease> preference_;
};

// ---- one GEMM ----

// Element and library types of one library GEMM of `type` (table above).
struct LibraryGemmTypes {
  DataType input = DataType::bf16;   // A and B
  DataType output = DataType::bf16;  // C and D
  cudaDataType_t input_cuda = CUDA_R_16BF;
  cudaDataType_t output_cuda = CUDA_R_16BF;
  cudaDataType_t scale_cuda = CUDA_R_32F;  // alpha and beta
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  std::string description;
};
LibraryGemmTypes library_gemm_types(Precision type);

// D = A^T B in cuBLAS's column-major terms ("TN", the layout fp8 and int8
// require): A is stored k x m (ld k), B k x n (ld k), D m x n (ld m), beta = 0.
// In row-major terms: A is m x k, B^T is n x k, and D^T is n x m.
class LtGemm {
 public:
  LtGemm(const LtHandle& handle, Precision type, int m, int n, int k);
  // Up to `count` algorithms from the heuristic, best first; empty when
  // cuBLASLt has none for this type on this GPU.
  std::vector<cublasLtMatmulHeuristicResult_t> algorithms(int count,
                                                          std::size_t workspace_bytes) const;
  // Enqueues one GEMM; returns cuBLASLt's status (an algorithm may refuse at run time).
  cublasStatus_t run(const cublasLtMatmulAlgo_t& algorithm, const void* a, const void* b, void* d,
                     void* workspace, std::size_t workspace_bytes, cudaStream_t stream) const;
  double flops() const { return 2.0 * m_ * n_ * static_cast<double>(k_); }
  const LibraryGemmTypes& types() const noexcept { return types_; }
  int m() const noexcept { return m_; }
  int n() const noexcept { return n_; }
  int k() const noexcept { return k_; }

 private:
  const LtHandle& handle_;
  LibraryGemmTypes types_;
  int m_, n_, k_;
  LtMatmulDesc desc_;
  LtMatrixLayout a_layout_, b_layout_, d_layout_;
  std::array<unsigned char, 8> alpha_{}, beta_{};  // in the scale type
  DeviceBuffer<float> unit_scale_;                 // fp8 A/B scale factors (1.0)
};

// For tests: D = A * B through cuBLASLt (the heuristic's first algorithm), `a`
// m x k and `b` k x n row-major, values exactly representable in `type`;
// returns D m x n row-major.
std::vector<double> run_library_gemm(Precision type, int m, int n, int k,
                                     const std::vector<double>& a, const std::vector<double>& b);

}  // namespace timeroof
