#include "counters/launch_names.hpp"

#include <utility>

namespace timeroof {

void LaunchNames::record(std::uint32_t correlation_id, std::string_view raw_name) {
  std::string name(raw_name);  // allocated outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  names_.insert_or_assign(correlation_id, std::move(name));
}

void LaunchNames::forget(std::uint32_t correlation_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  names_.erase(correlation_id);
}

std::optional<std::string> LaunchNames::take(std::uint32_t correlation_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = names_.find(correlation_id);
  if (found == names_.end()) return std::nullopt;
  std::string name = std::move(found->second);
  names_.erase(found);
  return name;
}

std::size_t LaunchNames::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return names_.size();
}

void LaunchNames::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  names_.clear();
}

ChosenKernelName choose_kernel_name(const char* cupti_raw_name,
                                    const std::optional<std::string>& launch_raw_name) {
  const std::string_view cupti = cupti_raw_name ? cupti_raw_name : "";
  if (!launch_raw_name || launch_raw_name->empty()) return {std::string(cupti), false, false};
  return {*launch_raw_name, true, !cupti.empty() && cupti != *launch_raw_name};
}

}  // namespace timeroof
