// Which launches of a profiled program get hardware counters (`timeroof profile
// --kernels/--nvtx/--skip/--count/--every`, issue 17). Kernel replay serializes
// a launch and runs it once per counter pass, so only a bounded selection is
// measured. The default measures each distinct kernel configuration (name, grid,
// block) once in each launch context (the innermost NVTX range the launching
// thread has pushed), at its first launch there: a training step repeats the same
// few hundred launches, whose counters then stand for their calls in the other
// steps. The context is part of the key because a configuration's work can differ
// between call sites: a convolution's grid covers its output, not its reduction
// (ResNet-50's layer1.0.conv1 and layer1.1.conv1 launch one kernel with one grid
// over 64 and 256 input channels), so counters of one would be wrong for the
// other by 4x. The analysis extrapolates within the same key
// (roofline/profile_analysis.hpp). Plain C++, no
// CUDA: the CLI validates and passes the options, the injection library (inject/)
// applies them, and the rules are tested on the CPU.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace timeroof {

// The environment variables `timeroof profile` passes the selection in.
inline constexpr const char* kCountersVariable = "TIMEROOF_PROFILE_COUNTERS";  // "0": none
inline constexpr const char* kKernelsVariable = "TIMEROOF_PROFILE_KERNELS";    // ECMAScript regex
inline constexpr const char* kNvtxVariable = "TIMEROOF_PROFILE_NVTX";          // ECMAScript regex
inline constexpr const char* kSkipVariable = "TIMEROOF_PROFILE_SKIP";
inline constexpr const char* kCountVariable = "TIMEROOF_PROFILE_COUNT";
inline constexpr const char* kEveryVariable = "TIMEROOF_PROFILE_EVERY";  // "1": every launch
inline constexpr const char* kMetricsVariable =
    "TIMEROOF_PROFILE_METRICS";  // extra, comma-separated
inline constexpr const char* kIterationRangeVariable =
    "TIMEROOF_PROFILE_ITERATION_RANGE";  // ECMAScript regex

// At most this many launches are measured unless --count says otherwise.
inline constexpr std::uint64_t kDefaultMeasuredLaunches = 500;

struct KernelSelectionOptions {
  bool enabled = true;
  std::string kernels;     // regex searched in the demangled name; empty: any
  std::string nvtx;        // regex searched in the open NVTX ranges' messages; empty: any
  std::uint64_t skip = 0;  // matching launches passed over first
  std::uint64_t count = kDefaultMeasuredLaunches;
  bool every = false;                // every matching launch, not only each configuration's first
  std::vector<std::string> metrics;  // the user's extra CUPTI metrics
  // Iteration replay (--iteration-range): every kernel of one instance of the
  // NVTX range matching this regex is measured, CUPTI's counter passes taken over
  // the next instances instead of replaying each kernel (no kernel runs twice, no
  // memory is saved or restored). --skip counts instances, at least 1: the
  // counters go to the launches of the last skipped (traced) instance. Excludes
  // kernels, nvtx and every. Empty: kernel replay of the selection above.
  std::string iteration_range;
};

// The options from the environment (`get` returns a variable's value or
// nullptr); a malformed value throws timeroof::Error naming the variable.
KernelSelectionOptions selection_from_environment(const char* (*get)(const char*));
// The variables that carry `options` (the inverse of selection_from_environment).
std::vector<std::pair<std::string, std::string>> selection_environment(
    const KernelSelectionOptions& options);
// A usage error for an option a program cannot run with (a regex that does not
// compile, --count 0), named by its option; nothing when the options are fine.
std::optional<std::string> selection_problem(const KernelSelectionOptions& options);

struct LaunchShape {
  std::array<std::uint32_t, 3> grid{};
  std::array<std::uint32_t, 3> block{};
  auto operator<=>(const LaunchShape&) const = default;
};

class KernelSelector {
 public:
  explicit KernelSelector(const KernelSelectionOptions& options);

  // Whether the counters should measure this launch; counts it either way.
  // `context`: the innermost range the launching thread has pushed ("" outside
  // any). `open_ranges` (read for --nvtx only): the launching thread's push/pop
  // stack and the process's open start/end ranges, any order.
  bool select(const std::string& name, const LaunchShape& shape, const std::string& context,
              const std::vector<std::string>& open_ranges);
  // A selected launch whose measurement failed: its configuration may be tried
  // again in its context and it does not use up --count.
  void measurement_failed(const std::string& name, const LaunchShape& shape,
                          const std::string& context);
  // Whether any later launch could still be selected (else the callbacks can stop).
  bool exhausted() const noexcept { return !enabled_ || measured_ >= count_; }
  // Whether select() reads the open ranges (--nvtx).
  bool wants_nvtx() const noexcept { return nvtx_.has_value(); }
  // Whether select() reads the context (the default selection; not --every).
  bool wants_context() const noexcept { return enabled_ && !every_; }

 private:
  bool enabled_;
  std::optional<std::regex> kernels_;
  std::optional<std::regex> nvtx_;
  std::uint64_t skip_;
  std::uint64_t count_;
  bool every_;
  std::uint64_t matching_ = 0;
  std::uint64_t measured_ = 0;
  // (name, shape, context); std::less<> finds a launch without copying its name.
  std::set<std::tuple<std::string, LaunchShape, std::string>, std::less<>> seen_;
};

}  // namespace timeroof
