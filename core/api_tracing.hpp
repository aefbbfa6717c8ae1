// Which CUDA runtime and driver API calls `timeroof profile --api` traces (issue
// 17). Every traced call is one CUPTI activity record, and a framework makes many
// per kernel (PyTorch ~13 runtime calls, each with driver calls under it), so
// tracing them all slowed a host-bound PyTorch iteration by up to 2x. What the
// analysis needs of the host side is the calls that put work on the GPU or wait
// for it: a kernel or copy is tied to its thread and NVTX range by its launching
// call, host gaps lie between launches and synchronizations. Plain C++, no CUDA:
// the CLI validates and stores the choice, the injection library (inject/)
// applies the name rule to CUPTI's callback names, the analysis reads it back.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace timeroof {

// The environment variable `timeroof profile` passes the choice in.
inline constexpr const char* kApiVariable = "TIMEROOF_PROFILE_API";

// The spellings are stored (spec.profile.api): never change one.
enum class ApiTracing {
  none,      // "none": no API call (kernels, copies, NVTX ranges only)
  launches,  // "launches": launch, graph launch, memcpy, memset, synchronize calls
  runtime,   // "runtime": every runtime call, and the driver's launches
  driver,    // "driver": every driver call, and the runtime's launches
  all        // "all": every runtime and driver call
};
inline constexpr std::array<ApiTracing, 5> kAllApiTracings = {
    ApiTracing::none, ApiTracing::launches, ApiTracing::runtime, ApiTracing::driver,
    ApiTracing::all};
// Cheap enough for a host-bound PyTorch iteration (docs/design.md) and all the
// analysis needs.
inline constexpr ApiTracing kDefaultApiTracing = ApiTracing::launches;
// A run stored before --api existed traced every call.
inline constexpr ApiTracing kStoredRunsApiTracing = ApiTracing::all;

const char* to_string(ApiTracing tracing);
std::optional<ApiTracing> find_api_tracing(std::string_view text);
// A usage error "--api: unknown value 'x'; allowed: none, launches, ..." for anything else.
ApiTracing parse_api_tracing(std::string_view text);
// "none, launches, runtime, driver, all"
std::string api_tracing_choices();

// Whether a call is one of those the analysis needs (the `launches` set): a kernel
// or graph launch, a memcpy or memset, or a call that waits for the GPU
// (device, context, stream or event synchronize). `name` is CUPTI's callback
// name, e.g. "cudaLaunchKernel_ptsz", "cuMemcpyHtoDAsync_v2".
bool is_launch_or_wait_call(std::string_view name);

// Which API a CUPTI callback id belongs to: "runtime", "driver".
enum class ApiDomain { runtime, driver };
const char* to_string(ApiDomain domain);
// Whether `tracing` records the call `name` of `domain`.
bool traces_api_call(ApiTracing tracing, ApiDomain domain, std::string_view name);
// Whether `tracing` records CUPTI's synchronization records (their own kind).
// Not under `launches`: the waiting calls are recorded already, and the kind cost
// a PyTorch ResNet-50 ~0.5 ms an iteration for its one synchronization (H200;
// docs/design.md).
bool traces_synchronization(ApiTracing tracing);

}  // namespace timeroof
