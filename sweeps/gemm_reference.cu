#include "sweeps/gemm_reference.hpp"

#include <cmath>

#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "kernels/element_load.cuh"

namespace timeroof {

namespace {

constexpr int kThreads = 128;

struct SampleIndices {
  const std::int64_t* rows;
  const std::int64_t* columns;
  const std::int64_t* batches;
  std::int64_t row_count, column_count, batch_count;
};

__global__ void sample_kernel(GemmReferenceOperands op, GemmActivation activation, SampleIndices at,
                              double* reference, double* library) {
  const std::int64_t s = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t total = at.row_count * at.column_count * at.batch_count;
  if (s >= total) return;
  const std::int64_t i = at.rows[s % at.row_count];
  const std::int64_t j = at.columns[(s / at.row_count) % at.column_count];
  const std::int64_t b = at.batches[s / (at.row_count * at.column_count)];
  const std::size_t a_base = static_cast<std::size_t>(b * op.m * op.k);
  const std::size_t b_base = static_cast<std::size_t>(b * op.k * op.n);
  double sum = 0;
  for (std::int64_t l = 0; l < op.k; ++l) {
    // Column-major: A(i, l) at i + l m, or stored transposed at l + i k; B likewise.
    const std::int64_t a_at = op.trans_a ? l + i * op.k : i + l * op.m;
    const std::int64_t b_at = op.trans_b ? j + l * op.n : l + j * op.k;
    sum += load_element(op.a, a_base + static_cast<std::size_t>(a_at), op.a_type) *
           load_element(op.b, b_base + static_cast<std::size_t>(b_at), op.b_type);
  }
  double x = op.scale * sum;
  if (op.bias) x += load_element(op.bias, static_cast<std::size_t>(i), op.bias_type);
  if (activation == GemmActivation::relu) x = x > 0 ? x : 0;
  if (activation == GemmActivation::gelu)
    x = 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  reference[s] = x;
  library[s] =
      load_element(op.d, static_cast<std::size_t>(b * op.m * op.n + i + j * op.m), op.d_type);
}

DeviceBuffer<std::int64_t> upload(const std::vector<std::int64_t>& values, cudaStream_t stream) {
  DeviceBuffer<std::int64_t> device(values.size());
  TR_CUDA_CHECK(
      cudaMemcpyAsync(device.get(), values.data(), device.bytes(), cudaMemcpyHostToDevice, stream));
  return device;
}

}  // namespace

GemmSampledOutputs sample_gemm(const GemmReferenceOperands& operands, GemmActivation activation,
                               const GemmSampling& sampling, cudaStream_t stream) {
  const std::size_t count = sampling.count();
  GemmSampledOutputs out;
  if (count == 0) return out;
  const DeviceBuffer<std::int64_t> rows = upload(sampling.rows, stream);
  const DeviceBuffer<std::int64_t> columns = upload(sampling.columns, stream);
  const DeviceBuffer<std::int64_t> batches = upload(sampling.batches, stream);
  DeviceBuffer<double> reference(count), library(count);
  const SampleIndices at{rows.get(),
                         columns.get(),
                         batches.get(),
                         static_cast<std::int64_t>(sampling.rows.size()),
                         static_cast<std::int64_t>(sampling.columns.size()),
                         static_cast<std::int64_t>(sampling.batches.size())};
  const auto blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
  sample_kernel<<<blocks, kThreads, 0, stream>>>(operands, activation, at, reference.get(),
                                                 library.get());
  TR_CUDA_CHECK(cudaGetLastError());
  out.reference.resize(count);
  out.library.resize(count);
  TR_CUDA_CHECK(cudaMemcpyAsync(out.reference.data(), reference.get(), reference.bytes(),
                                cudaMemcpyDeviceToHost, stream));
  TR_CUDA_CHECK(cudaMemcpyAsync(out.library.data(), library.get(), library.bytes(),
                                cudaMemcpyDeviceToHost, stream));
  TR_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}

}  // namespace timeroof
