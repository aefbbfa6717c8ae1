// The library implementations of the families' problems (cuDNN graph and RNN
// APIs, cuBLASLt, own kernels): CUDA builds only. The families, their problems
// and the spec parser (sweeps/family.hpp, problem.hpp, spec.hpp) are host-only;
// make_operator builds the Operator that measures one of a family's points.
#pragma once

#include <cublasLt.h>
#include <cudnn.h>

#include <memory>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "kernels/cublas_reference.hpp"
#include "sweeps/cudnn_handles.hpp"
#include "sweeps/family.hpp"
#include "sweeps/operator.hpp"

namespace timeroof {

// The library handles the operators of a sweep share, each created on first use
// (cudnnCreate takes tens of ms; a sweep that never calls a library never
// creates its handle). Destroyed after every operator that shares them.
class LibraryHandles {
 public:
  LibraryHandles() = default;
  LibraryHandles(const LibraryHandles&) = delete;
  LibraryHandles& operator=(const LibraryHandles&) = delete;

  cudnnHandle_t cudnn();
  cublasLtHandle_t cublas_lt();

 private:
  std::mutex mutex_;
  std::optional<CudnnHandle> cudnn_;
  std::optional<LtHandle> cublas_lt_;
};

// The operator that measures `point` of `family` (validated: a usage error
// names the key; no GPU work). `libraries` null: the operator creates its own
// in prepare(). A family with no implementation in this build is a usage error.
std::unique_ptr<Operator> make_operator(const OperatorFamily& family, const nlohmann::json& point,
                                        std::shared_ptr<LibraryHandles> libraries = nullptr);

}  // namespace timeroof
