// Host helpers shared by the ceiling families (kernels/*_ceilings.cpp): sizing a
// measurement's work before the harness times it, and small formatting aids.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/check.hpp"
#include "gpu/handles.hpp"
#include "kernels/ceilings.hpp"
#include "kernels/measure.hpp"

namespace timeroof::ceiling_support {

// Makes the request's device current and returns its SM count.
inline int select_device_and_count_sms(const CeilingRequest& request) {
  TR_CUDA_CHECK(cudaSetDevice(request.device));
  if (request.gpu.sm_count > 0) return request.gpu.sm_count;
  int sms = 0;
  TR_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, request.device));
  return sms;
}

// Seconds one call of `launch` takes: one untimed call (module load, caches),
// then one call between events. Only sizes the work; the harness does the timing.
inline double time_one_call(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream) {
  launch(stream);
  Event start, stop;
  start.record(stream);
  launch(stream);
  stop.record(stream);
  stop.synchronize();
  return stop.seconds_since(start);
}

// The repeat count (a multiple of `multiple`, within [multiple, max_count]) that
// makes a call last about `target_s`, given that `probe_count` took `probe_s`.
inline long long count_for_target(double probe_s, long long probe_count, double target_s,
                                  long long multiple, long long max_count) {
  const double per_unit = std::max(probe_s, 1e-7) / static_cast<double>(probe_count);
  const double wanted = target_s / per_unit;
  const double clamped =
      std::clamp(wanted, static_cast<double>(multiple), static_cast<double>(max_count));
  const long long units = static_cast<long long>(clamped) / multiple * multiple;
  return std::max(units, multiple);
}

// A measurement of `units` repeated operations per sample, as the time of one.
inline Measurement per_unit(Measurement m, double units) {
  m.median_s /= units;
  m.min_s /= units;
  m.max_s /= units;
  return m;  // spread is a ratio and stays
}

// Concatenates anything streamable: the `method` strings.
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

inline std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}
inline std::size_t round_down(std::size_t value, std::size_t multiple) {
  return value / multiple * multiple;
}

// A compute roof's theoretical peak is taken at the highest clock it showed: NVML's
// median reading, or the clock over the kernel's own execution (clock64 against
// %globaltimer, one figure per timed launch) where that is higher. Neither alone
// bounds the rate: under the power cap the in-kernel clock read 4-5% below NVML
// (tensor_fp16 1.506 against 1.575 GHz on an H100, the roof then at 105% of a peak
// at it: the Tensor Cores' rate does not follow clock64's count there), while an
// unthrottled tensor_fp64 on another H100 read 2.010 GHz in-kernel against NVML's
// 1.965 (and its maximum 1.980), the rate 101-102% of a peak at NVML's clock: the
// GPU's timer, which times the launches too, ran that much slow against the SM
// clock. The CUDA-core roofs on that H100 stood at 100.65-100.68% of a peak at
// NVML's clock, for the same reason.
inline void take_kernel_clock(Ceiling& ceiling, std::vector<double> launch_clocks_hz, int blocks) {
  if (launch_clocks_hz.empty()) return;
  std::sort(launch_clocks_hz.begin(), launch_clocks_hz.end());
  const double median = launch_clocks_hz[launch_clocks_hz.size() / 2],
               highest = launch_clocks_hz.back();
  const std::optional<double> nvml = ceiling.sm_clock_hz;
  if (!nvml || highest > *nvml) ceiling.sm_clock_hz = highest;
  ceiling.method +=
      concat("; SM clock over the kernel's own execution (clock64 against %globaltimer, median of ",
             blocks, " blocks) ", median * 1e-9, " GHz median, ", highest * 1e-9,
             " GHz highest of the last ", launch_clocks_hz.size(), " launches; NVML ",
             nvml ? *nvml * 1e-9 : 0.0, " GHz; the theoretical peak at the higher, ",
             *ceiling.sm_clock_hz * 1e-9, " GHz");
}

}  // namespace timeroof::ceiling_support
