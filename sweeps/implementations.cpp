#include "sweeps/implementations.hpp"

#include <string>
#include <utility>

#include "core/error.hpp"
#include "sweeps/attention.hpp"
#include "sweeps/conv2d.hpp"
#include "sweeps/gemm.hpp"
#include "sweeps/lstm.hpp"
#include "sweeps/memory_bound_ops.hpp"
#include "sweeps/norm.hpp"

namespace timeroof {

cudnnHandle_t LibraryHandles::cudnn() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!cudnn_) cudnn_.emplace();
  return cudnn_->get();
}

cublasLtHandle_t LibraryHandles::cublas_lt() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!cublas_lt_) cublas_lt_.emplace();
  return cublas_lt_->get();
}

namespace {

using Make = std::unique_ptr<Operator> (*)(const nlohmann::json& point,
                                           std::shared_ptr<LibraryHandles> libraries);

// Each family's implementation, by the family's name (sweeps/families.cpp).
constexpr std::pair<const char*, Make> kImplementations[] = {
    {"conv2d",
     [](const nlohmann::json& point,
        std::shared_ptr<LibraryHandles> libraries) -> std::unique_ptr<Operator> {
       return std::make_unique<Conv2d>(conv2d_spec_from_params(point), std::move(libraries));
     }},
    {"lstm",
     [](const nlohmann::json& point,
        std::shared_ptr<LibraryHandles> libraries) -> std::unique_ptr<Operator> {
       return std::make_unique<Lstm>(lstm_spec_from_params(point), std::move(libraries));
     }},
    {"gemm",
     [](const nlohmann::json& point,
        std::shared_ptr<LibraryHandles> libraries) -> std::unique_ptr<Operator> {
       return std::make_unique<Gemm>(gemm_spec_from_params(point), std::move(libraries));
     }},
    {"attention",
     [](const nlohmann::json& point,
        std::shared_ptr<LibraryHandles> libraries) -> std::unique_ptr<Operator> {
       return std::make_unique<Attention>(attention_spec_from_params(point), std::move(libraries));
     }},
    {"pointwise",
     [](const nlohmann::json& point,
        std::shared_ptr<LibraryHandles> libraries) -> std::unique_ptr<Operator> {
       return std::make_unique<Pointwise>(pointwise_spec_from_params(point), std::move(libraries));
     }},
    {"softmax",
     [](const nlohmann::json& point,
        std::shared_ptr<LibraryHandles> libraries) -> std::unique_ptr<Operator> {
       return std::make_unique<Softmax>(softmax_spec_from_params(point), std::move(libraries));
     }},
    {"pool",
     [](const nlohmann::json& point,
        std::shared_ptr<LibraryHandles> libraries) -> std::unique_ptr<Operator> {
       return std::make_unique<Pool>(pool_spec_from_params(point), std::move(libraries));
     }},
    {"layernorm",
     [](const nlohmann::json& point,
        std::shared_ptr<LibraryHandles> libraries) -> std::unique_ptr<Operator> {
       return std::make_unique<Layernorm>(layernorm_spec_from_params(point), std::move(libraries));
     }},
    {"batchnorm",
     [](const nlohmann::json& point,
        std::shared_ptr<LibraryHandles> libraries) -> std::unique_ptr<Operator> {
       return std::make_unique<Batchnorm>(batchnorm_spec_from_params(point), std::move(libraries));
     }},
};

}  // namespace

std::unique_ptr<Operator> make_operator(const OperatorFamily& family, const nlohmann::json& point,
                                        std::shared_ptr<LibraryHandles> libraries) {
  for (const auto& [name, make] : kImplementations)
    if (family.name == name) return make(point, std::move(libraries));
  throw usage_error("operator '" + family.name + "' has no library implementation in this build");
}

}  // namespace timeroof
