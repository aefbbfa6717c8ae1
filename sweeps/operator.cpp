#include "sweeps/operator.hpp"

#include <cublas_api.h>
#include <cuda.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <string>

#include "core/error.hpp"

namespace timeroof {

const char* to_string(CheckStatus status) {
  switch (status) {
    case CheckStatus::passed:
      return "passed";
    case CheckStatus::failed:
      return "failed";
    case CheckStatus::skipped:
      return "skipped";
  }
  return "?";
}

double long_sum_tolerance(double reduction_length) {
  return 4 * std::ldexp(1.0, -24) * std::sqrt(reduction_length);
}

void judge(CheckResult& result) {
  result.status =
      result.relative_error <= result.tolerance ? CheckStatus::passed : CheckStatus::failed;
  char error[32], tolerance[32];
  std::snprintf(error, sizeof error, "%.3g", result.relative_error);
  std::snprintf(tolerance, sizeof tolerance, "%.3g", result.tolerance);
  result.detail = result.method + ": relative error " + error + (result.passed() ? " <= " : " > ") +
                  tolerance + " over " + std::to_string(result.elements) + " outputs";
}

double relative_tolerance(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return 1e-5;
    case Precision::tf32:
      return 1e-3;
    case Precision::fp16:
    case Precision::bf16:
      return 1e-2;
    // fp8 inputs are exact in the reference (it reads the stored values); the
    // error is the fp32 accumulation and the bf16 output's rounding, at most
    // 2^-9 of the largest output (2e-3): 1e-2 leaves five times that.
    case Precision::fp8:
      return 1e-2;
    case Precision::int8:  // integer arithmetic: exact
    case Precision::fp64:  // no operator computes in fp64 yet
      break;
  }
  return 0;
}

double relative_error(std::span<const double> out, std::span<const double> ref) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (out.size() != ref.size()) return kInf;
  double max_difference = 0;
  double max_reference = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double difference = std::abs(out[i] - ref[i]);
    if (std::isnan(difference)) return kInf;
    max_difference = std::max(max_difference, difference);
    max_reference = std::max(max_reference, std::abs(ref[i]));
  }
  if (max_difference == 0) return 0;
  return max_reference > 0 ? max_difference / max_reference : kInf;
}

std::vector<DeviceTensor> with_buffers(
    const std::vector<TensorArgument>& tensors,
    const std::function<void*(const std::string& role)>& buffer) {
  std::vector<DeviceTensor> on_device;
  for (const TensorArgument& t : tensors)
    on_device.push_back({t.role, buffer ? buffer(t.role) : nullptr, t.bytes});
  return on_device;
}

std::vector<DeviceTensor> Operator::inputs() const {
  return with_buffers(problem().inputs(), nullptr);
}

std::vector<DeviceTensor> Operator::outputs() const {
  return with_buffers(problem().outputs(), nullptr);
}

Point describe(const Operator& op) {
  Point point;
  point.op = op.op();
  point.params = op.params();
  point.precision = to_string(op.precision());
  point.math_mode = to_string(op.math_mode());
  point.algorithm = op.algorithm();
  point.flops = op.flops();
  point.min_bytes = op.min_bytes();
  return point;
}

namespace {

// check.cpp writes "<library> error <n> (<message>) in <call text> at <file>:<line>";
// keep "<library> <function>: <message>". Messages of other shapes stay whole.
std::string short_reason(const GpuError& error) {
  const std::string text = error.what();
  const std::string head = error.library() + " error " + std::to_string(error.status()) + " (";
  const std::size_t at = text.rfind(" at ");
  if (text.rfind(head, 0) != 0 || at == std::string::npos) return text;
  const std::size_t in = text.rfind(") in ", at);
  if (in == std::string::npos || in < head.size()) return text;
  const std::string message = text.substr(head.size(), in - head.size());
  const std::string call = text.substr(in + 5, at - in - 5);
  return error.library() + " " + call.substr(0, call.find('(')) + ": " + message;
}

PointStatus status_of(const GpuError& error) {
  const int status = error.status();
  if (error.library() == "cuDNN") {
    const int category = status / 1000 * 1000;
    if (category == CUDNN_STATUS_NOT_SUPPORTED) return PointStatus::unsupported;
    if (category == CUDNN_STATUS_BAD_PARAM) {
      // These four mean our call was wrong, not the configuration.
      if (status == CUDNN_STATUS_BAD_PARAM_NULL_POINTER ||
          status == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER ||
          status == CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED ||
          status == CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
        return PointStatus::failed;
      return PointStatus::unsupported;
    }
    if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
        status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
      return PointStatus::out_of_memory;
    return PointStatus::failed;
  }
  if (error.library() == "CUDA runtime")
    return status == cudaErrorMemoryAllocation ? PointStatus::out_of_memory : PointStatus::failed;
  if (error.library() == "CUDA driver")
    return status == CUDA_ERROR_OUT_OF_MEMORY ? PointStatus::out_of_memory : PointStatus::failed;
  if (error.library() == "cuBLAS") {
    if (status == CUBLAS_STATUS_ALLOC_FAILED) return PointStatus::out_of_memory;
    if (status == CUBLAS_STATUS_NOT_SUPPORTED) return PointStatus::unsupported;
  }
  return PointStatus::failed;
}

}  // namespace

Outcome outcome_of(const GpuError& error) {
  return {status_of(error), short_reason(error)};
}

Outcome outcome_of_current_exception() {
  try {
    throw;
  } catch (const GpuError& error) {
    return outcome_of(error);
  } catch (const Error& error) {
    return {error.code() == ExitCode::usage ? PointStatus::unsupported : PointStatus::failed,
            error.what()};
  } catch (const std::bad_alloc&) {
    return {PointStatus::out_of_memory, "host memory allocation failed (std::bad_alloc)"};
  } catch (const std::exception& error) {
    return {PointStatus::failed, error.what()};
  } catch (...) {
    return {PointStatus::failed, "unknown exception"};
  }
}

}  // namespace timeroof
