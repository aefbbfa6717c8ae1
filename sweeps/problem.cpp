// Tensor sizes without wraparound (sweeps/problem.hpp).
#include "sweeps/problem.hpp"

#include <string>

namespace timeroof {

std::optional<std::int64_t> checked_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t product = 1;
  for (const std::int64_t factor : factors)
    if (factor < 0 || __builtin_mul_overflow(product, factor, &product)) return std::nullopt;
  return product;
}

std::optional<std::int64_t> checked_sum(std::initializer_list<std::optional<std::int64_t>> terms) {
  std::int64_t sum = 0;
  for (const std::optional<std::int64_t>& term : terms)
    if (!term || *term < 0 || __builtin_add_overflow(sum, *term, &sum)) return std::nullopt;
  return sum;
}

Error tensor_too_large(const std::string& operator_name, const std::string& shape,
                       std::size_t element_bytes, const std::string& fix) {
  return usage_error(operator_name + ": tensor " + shape + " of " + std::to_string(element_bytes) +
                     " bytes each is larger than " + std::to_string(kMaxTensorBytes) +
                     " bytes, the most a tensor may hold; allowed: " + fix);
}

std::int64_t tensor_bytes(const std::string& operator_name, const std::string& tensor,
                          std::initializer_list<Extent> extents, std::size_t element_bytes,
                          const std::string& fix) {
  std::optional<std::int64_t> bytes = static_cast<std::int64_t>(element_bytes);
  std::string names, values;
  for (const Extent& extent : extents) {
    if (bytes) bytes = checked_product({*bytes, extent.value});
    names += (names.empty() ? "" : " x ") + std::string(extent.name);
    values += (values.empty() ? "" : " x ") + std::to_string(extent.value);
  }
  if (!bytes)
    throw tensor_too_large(operator_name, tensor + " = " + names + " = " + values + " elements",
                           element_bytes, fix);
  return *bytes;
}

}  // namespace timeroof
