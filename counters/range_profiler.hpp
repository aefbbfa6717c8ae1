// CUPTI range profiler (CUDA 13 cuptiRangeProfiler* API), in-process.
// A ProfilerSession attaches to the current device's primary context for its
// lifetime; profile_kernels() measures every kernel a callable launches, one
// range per kernel, replaying each kernel as often as the metric set needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <cupti_result.h>

#include "core/error.hpp"
#include "counters/metric_host.hpp"

struct CUpti_RangeProfiler_Object;
typedef struct CUctx_st* CUcontext;

namespace timeroof {

class MetricHost;

// Counters cannot be read here; reason() and fix() say why and what to do.
class CounterAccessError : public Error {
 public:
  CounterAccessError(const std::string& reason, const std::string& fix, bool busy = false)
      : Error(ExitCode::environment,
              "hardware counters unavailable: " + reason + (fix.empty() ? "" : "; fix: " + fix)),
        reason_(reason),
        fix_(fix),
        busy_(busy) {}
  const std::string& reason() const noexcept { return reason_; }
  const std::string& fix() const noexcept { return fix_; }
  // Another process holds the counters (CounterAccess::busy): waiting may help.
  bool busy() const noexcept { return busy_; }

 private:
  std::string reason_;
  std::string fix_;
  bool busy_ = false;
};

// The reason and fix of CUPTI_ERROR_HARDWARE_BUSY, wherever it surfaces.
CounterAccessError counters_busy_error(const std::string& step);

// cuptiProfilerInitialize / DeInitialize, which every profiler call (even
// cuptiDeviceGetChipName) needs first. Throws CounterAccessError on failure.
class ProfilerInitialization {
 public:
  ProfilerInitialization();
  ~ProfilerInitialization();
  ProfilerInitialization(const ProfilerInitialization&) = delete;
  ProfilerInitialization& operator=(const ProfilerInitialization&) = delete;
};

// The CUPTI chip name ("GH100") of a device; needs a ProfilerInitialization.
std::string chip_name(int device);

// Reason and fix for a CUPTI failure while attaching the profiler.
CounterAccessError describe_access_failure(CUptiResult status, const std::string& step);

struct RangeValues {
  std::string name;            // auto ranges: the launch index ("0", "1", ...)
  std::vector<double> values;  // in the order of ProfileResult::metrics
};

struct ProfileResult {
  std::vector<std::string> metrics;
  std::vector<RangeValues> ranges;
  std::size_t passes = 0;          // replay passes the metric set needed
  std::size_t dropped_ranges = 0;  // ranges beyond max_ranges: reported, never silent
};

// One named region of user work, profiled as a single range: every metric is
// summed over all kernels `run` launches (an operator = all kernels of one call).
struct UserRange {
  std::string name;
  std::function<void()> run;  // enqueues the work; re-run once per replay pass
  // Runs (and is waited for) before the range opens, every pass, outside the
  // counters: e.g. an L2 flush for cold-cache numbers.
  std::function<void()> setup = nullptr;
};

// One call of ProfilerSession::profile_call_batch.
struct BatchedCall {
  // Runs right before `run` in every pass, inside the collection: what puts the
  // cache where the call should find it (an L2 flush for cold numbers, or one
  // call of the operator itself for warm ones). Auto ranges cannot leave its
  // kernels out, so they are profiled too, and their ranges dropped.
  std::function<void()> prelude;
  std::size_t prelude_kernels = 0;  // kernels one prelude launches
  std::function<void()> run;        // enqueues one call; re-run once per pass
  std::size_t kernels = 0;          // kernels one call launches
};

// A batch's ranges did not add up to the kernels its calls declared.
class KernelCountMismatch : public Error {
 public:
  explicit KernelCountMismatch(const std::string& what) : Error(ExitCode::environment, what) {}
};

// How user-replayed work is brought back to its starting state between passes.
enum class ReplayState {
  idempotent,  // re-running gives the same work (e.g. y = conv(x)): nothing to restore
  checkpoint,  // CUPTI saves device memory before the first pass and restores it before
               // every later pass (for work that updates its own inputs)
};

// Wall time spent in each phase of the collections of a session, summed.
struct ProfilerPhaseSeconds {
  double enable = 0;      // cuptiRangeProfilerEnable
  double configure = 0;   // config image, counter data image, SetConfig
  double start_stop = 0;  // cuptiRangeProfilerStart and Stop
  double replay = 0;      // the passes: the caller's work under Start/Stop (not
                          // of begin_launch's windows: their caller times each launch)
  double decode = 0;      // DecodeData and metric evaluation
  double disable = 0;     // cuptiRangeProfilerDisable
  std::size_t collections = 0;
};

class ProfilerSession {
 public:
  // Initialises CUPTI's profiler on the current device and checks that its
  // counters can be read; throws CounterAccessError with reason and fix if not.
  ProfilerSession();
  // The same on a given context of device `device` (an injected program's own
  // context, which need not be the primary one); no CUDA runtime call.
  ProfilerSession(CUcontext context, int device);
  ~ProfilerSession();
  ProfilerSession(const ProfilerSession&) = delete;
  ProfilerSession& operator=(const ProfilerSession&) = delete;

  const std::string& chip() const noexcept { return chip_; }
  const std::vector<std::uint8_t>& counter_availability() const noexcept { return availability_; }
  const ProfilerPhaseSeconds& phase_seconds() const noexcept { return phases_; }
  // Keep the range profiler enabled from one collection to the next instead of
  // enabling it per collection (experimental: see Collection in the .cpp). Not
  // for begin_launch: an enabled, configured profiler in kernel replay slowed
  // every later launch of a PyTorch ResNet-50 (9 ms steps took 2.4 s, H100) and a
  // measurement came back empty.
  void keep_enabled(bool keep) noexcept { keep_enabled_ = keep; }

  // Auto range + kernel replay: each kernel `work` launches is one range.
  ProfileResult profile_kernels(const std::vector<std::string>& metrics,
                                const std::function<void()>& work, std::size_t max_ranges = 256);

  // Auto range + kernel replay around launches that the caller does not make
  // itself: an injected program's, bracketed by its launch callbacks. Call
  // begin_launch right before the first launch and end_launch after the last
  // returns (up to max_launches, in a row: any kernel launched in between is
  // measured too): CUPTI replays each kernel inside its launch call, as often as
  // the metrics need. end_launch returns one range per kernel launched in between
  // (other threads' launches on the same context land there too). Start and Stop
  // cost ~145 ms on an H100 (PyTorch's context; Enable costs nothing), a 4-pass
  // replay of a short kernel ~60 ms: launches in a row share one window. The
  // configuration is built once by the caller (CollectionPlan::config): building
  // one costs more than measuring a short kernel.
  void begin_launch(const ConfigImage& config, std::size_t max_launches);
  ProfileResult end_launch();
  bool measuring_launch() const noexcept { return launch_ != nullptr; }

  // Auto range + user replay over passes the caller does not run itself: an
  // injected program's repeated iterations, one pass each (every kernel launched
  // on the context between start_pass and stop_pass is a range, in launch order).
  // Nothing is replayed and no memory saved or restored, so the passes must launch
  // the same kernels in the same order: the caller checks. begin_passes once
  // (up to max_ranges kernels a pass), then start_pass and stop_pass around each
  // iteration, its kernels completed before stop_pass, until stop_pass returns
  // true (CUPTI has every pass); end_passes then decodes. abandon_passes tears
  // down a collection that will not finish.
  void begin_passes(const ConfigImage& config, std::size_t max_ranges);
  void start_pass();
  bool stop_pass();
  ProfileResult end_passes();
  void abandon_passes() noexcept;

  // User range + user replay: each UserRange is one range; all of them run once
  // per pass, in order, until CUPTI has every pass it needs.
  ProfileResult profile_ranges(const std::vector<std::string>& metrics,
                               const std::vector<UserRange>& ranges,
                               ReplayState state = ReplayState::idempotent);

  // Auto range + user replay: every kernel one call of `call.run` launches is
  // one range (named by launch index), and the whole call is re-run once per
  // pass, `call.setup` first (outside the counters). Per-kernel counters of a
  // multi-kernel operator with the operator's own state between kernels, which
  // kernel replay (each kernel alone, memory saved and restored) cannot give.
  // Kernels beyond max_kernels are not measured: dropped_ranges is then at least 1
  // (CUPTI does not count them in this mode; the caller should retry larger).
  ProfileResult profile_call_kernels(const std::vector<std::string>& metrics, const UserRange& call,
                                     std::size_t max_kernels = 256,
                                     ReplayState state = ReplayState::idempotent);

  // profile_call_kernels for several calls in one collection: every pass runs
  // each call's prelude and then its run, in order, so CUPTI's per-pass cost
  // (~0.2 s on an H200) is paid once per batch instead of once per call. Returns
  // one ProfileResult per call, its ranges the kernels of its run (named by launch
  // index within the call). The counts each call declares must be exact: auto
  // ranges are only launch indices, so they are what maps ranges to calls. Throws
  // KernelCountMismatch when CUPTI saw a different total; the caller then profiles
  // the calls one by one with profile_call_kernels.
  std::vector<ProfileResult> profile_call_batch(const std::vector<std::string>& metrics,
                                                const std::vector<BatchedCall>& calls,
                                                ReplayState state = ReplayState::idempotent);

 private:
  class Collection;
  struct CounterData;
  struct LaunchWindow;
  void enable();
  void disable() noexcept;
  CounterData prepare(const std::vector<std::string>& metrics, std::size_t max_ranges,
                      int range_mode, int replay_mode);
  CounterData prepare(ConfigImage config, std::size_t max_ranges, int range_mode, int replay_mode);
  // Evaluates every range, or only those `keep` marks (the others keep empty values).
  ProfileResult decode(CounterData& data, const std::vector<bool>& keep = {});
  // cuptiRangeProfilerStart / Stop on profiler_; stop_profiler returns whether
  // CUPTI has now been given every pass; stop_profiler_quietly only warns (for
  // paths already unwinding).
  void start_profiler();
  bool stop_profiler();
  void stop_profiler_quietly() noexcept;
  // Runs body between cuptiRangeProfilerStart and Stop (Stop also when body
  // throws); returns whether CUPTI has now been given every pass.
  bool run_between_start_and_stop(const std::function<void()>& body);
  // The user-replay pass loop: before_pass, Start, pass_body, Stop, until CUPTI
  // has every pass; restores a checkpoint between passes when asked.
  ProfileResult user_replay(const std::vector<std::string>& metrics, std::size_t max_ranges,
                            int range_mode, ReplayState state,
                            const std::function<void()>& pass_body,
                            const std::function<void()>& before_pass = nullptr,
                            const std::vector<bool>& keep = {});

  CUcontext context_ = nullptr;  // first: the context exists before CUPTI attaches
  ProfilerInitialization initialization_;
  std::string chip_;
  std::unique_ptr<MetricHost> evaluator_;  // built once: host objects cost ~50 ms each
  std::vector<std::uint8_t> availability_;
  CUpti_RangeProfiler_Object* profiler_ = nullptr;
  ProfilerPhaseSeconds phases_;
  bool keep_enabled_ = false;
  std::unique_ptr<LaunchWindow> launch_;  // between begin_launch and end_launch
};

}  // namespace timeroof
