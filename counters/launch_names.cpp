#include "counters/launch_names.hpp"

#include <utility>

namespace timeroof {

void LaunchNames::record(std::uint32_t correlation_id, std::string_view raw_name) {
  record(correlation_id, std::make_shared<const std::string>(raw_name));  // outside the lock
}

void LaunchNames::record(std::uint32_t correlation_id, Name raw_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  names_.insert_or_assign(correlation_id, std::move(raw_name));
}

void LaunchNames::forget(std::uint32_t correlation_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  names_.erase(correlation_id);
}

std::optional<std::string> LaunchNames::take(std::uint32_t correlation_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = names_.find(correlation_id);
  if (found == names_.end()) return std::nullopt;
  const Name name = std::move(found->second);
  names_.erase(found);
  if (!name) return std::nullopt;
  return *name;
}

std::size_t LaunchNames::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return names_.size();
}

void LaunchNames::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  names_.clear();
}

KernelNameCache::Lookup KernelNameCache::find(const void* handle) {
  Lookup lookup;
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    const auto found = names_.find(handle);
    if (found != names_.end()) lookup.name = found->second;
    lookup.generation = generation_;
  }
  (lookup.name ? hits_ : queries_).fetch_add(1, std::memory_order_relaxed);
  return lookup;
}

LaunchNames::Name KernelNameCache::insert(const void* handle, std::string_view raw_name,
                                          std::uint64_t generation) {
  auto name = std::make_shared<const std::string>(raw_name);  // allocated outside the lock
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (generation == generation_) names_.insert_or_assign(handle, name);
  return name;
}

void KernelNameCache::clear() {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  names_.clear();
  ++generation_;
  clears_.fetch_add(1, std::memory_order_relaxed);
}

void KernelNameCache::reset() {
  clear();
  hits_.store(0, std::memory_order_relaxed);
  queries_.store(0, std::memory_order_relaxed);
  clears_.store(0, std::memory_order_relaxed);
}

NameCacheCounts KernelNameCache::counts() const {
  return {hits_.load(std::memory_order_relaxed), queries_.load(std::memory_order_relaxed),
          clears_.load(std::memory_order_relaxed)};
}

std::size_t KernelNameCache::size() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return names_.size();
}

ChosenKernelName choose_kernel_name(const char* cupti_raw_name,
                                    const std::optional<std::string>& launch_raw_name) {
  const std::string_view cupti = cupti_raw_name ? cupti_raw_name : "";
  if (!launch_raw_name || launch_raw_name->empty()) return {std::string(cupti), false, false};
  return {*launch_raw_name, true, !cupti.empty() && cupti != *launch_raw_name};
}

}  // namespace timeroof
