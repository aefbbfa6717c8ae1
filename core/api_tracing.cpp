#include "core/api_tracing.hpp"

#include "core/error.hpp"

namespace timeroof {

const char* to_string(ApiTracing tracing) {
  switch (tracing) {
    case ApiTracing::none:
      return "none";
    case ApiTracing::launches:
      return "launches";
    case ApiTracing::runtime:
      return "runtime";
    case ApiTracing::driver:
      return "driver";
    case ApiTracing::all:
      return "all";
  }
  return "all";
}

std::optional<ApiTracing> find_api_tracing(std::string_view text) {
  for (ApiTracing t : kAllApiTracings)
    if (text == to_string(t)) return t;
  return std::nullopt;
}

std::string api_tracing_choices() {
  std::string names;
  for (ApiTracing t : kAllApiTracings)
    names += (names.empty() ? "" : ", ") + std::string(to_string(t));
  return names;
}

ApiTracing parse_api_tracing(std::string_view text) {
  if (const auto tracing = find_api_tracing(text)) return *tracing;
  throw usage_error("--api: unknown value '" + std::string(text) +
                    "'; allowed: " + api_tracing_choices());
}

const char* to_string(ApiDomain domain) {
  return domain == ApiDomain::runtime ? "runtime" : "driver";
}

bool is_launch_or_wait_call(std::string_view name) {
  // Prefixes, so the per-thread-stream (_ptsz, _ptds) and versioned (_v2,
  // _v7000) variants of each call are in too.
  constexpr std::string_view kPrefixes[] = {
      // launches (`__cudaLaunchKernel`: the runtime's entry for <<<>>>)
      "cudaLaunch", "__cudaLaunch", "cudaGraphLaunch", "cuLaunch", "cuGraphLaunch",
      // copies and memsets
      "cudaMemcpy", "cudaMemset", "cuMemcpy", "cuMemset", "cu64Memcpy", "cu64Memset",
      // calls that wait for the GPU
      "cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize",
      "cudaEventSynchronize", "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize"};
  for (std::string_view prefix : kPrefixes)
    if (name.starts_with(prefix)) return true;
  return false;
}

bool traces_api_call(ApiTracing tracing, ApiDomain domain, std::string_view name) {
  switch (tracing) {
    case ApiTracing::none:
      return false;
    case ApiTracing::launches:
      return is_launch_or_wait_call(name);
    case ApiTracing::runtime:
      return domain == ApiDomain::runtime || is_launch_or_wait_call(name);
    case ApiTracing::driver:
      return domain == ApiDomain::driver || is_launch_or_wait_call(name);
    case ApiTracing::all:
      return true;
  }
  return true;
}

bool traces_synchronization(ApiTracing tracing) {
  return tracing != ApiTracing::none && tracing != ApiTracing::launches;
}

}  // namespace timeroof
