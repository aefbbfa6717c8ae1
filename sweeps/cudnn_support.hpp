// What every cuDNN operator needs the same way: our precisions as cuDNN types, the math type a
// precision and mode ask of cuDNN, and the memory check that fails an impossible point fast.
#pragma once

#include <cudnn.h>

#include <string_view>

#include "kernels/device_fill.hpp"
#include "sweeps/operator.hpp"

namespace timeroof {

// fp16 and bf16 as themselves, every other type as fp32 (tf32 stores fp32).
cudnnDataType_t cudnn_data_type(DataType type);
cudnnDataType_t cudnn_data_type(Precision precision);
// fma_only -> CUDNN_FMA_MATH (no TF32); tf32 -> CUDNN_DEFAULT_MATH ("TF32 permitted
// on A100 and later"); fp16/bf16 -> CUDNN_TENSOR_OP_MATH.
cudnnMathType_t requested_math(Precision precision, MathMode mode);
const char* math_type_name(cudnnMathType_t math);

// Clears the runtime's stale last error (a failed cudaMalloc of an earlier point
// leaves one, non-sticky, that this point's first launch check would report) and
// throws cudaErrorMemoryAllocation, before cuDNN or cudaMalloc see the shape,
// when `tensor_bytes` exceed the free device memory.
void require_device_memory(double tensor_bytes);

}  // namespace timeroof
