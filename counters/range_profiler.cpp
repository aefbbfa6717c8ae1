#include "counters/range_profiler.hpp"

#include <cuda_runtime_api.h>
#include <cupti_checkpoint.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "core/elapsed.hpp"
#include "counters/metric_host.hpp"
#include "gpu/check.hpp"
#include "gpu/check_cupti.hpp"
#include "gpu/driver.hpp"

namespace timeroof {

namespace {

// "RmProfilingAdminOnly: 1" in the driver's parameters means only root may profile.
std::string admin_only_setting() {
  std::ifstream params("/proc/driver/nvidia/params");
  std::string line;
  while (std::getline(params, line))
    if (line.rfind("RmProfilingAdminOnly:", 0) == 0) return line;
  return {};
}

}  // namespace

CounterAccessError counters_busy_error(const std::string& step) {
  // Seen on an H100: of three sweeps started together on one GPU, two got it
  // from the counter probe (cuptiRangeProfilerStart, cuptiProfilerGetCounterAvailability).
  return CounterAccessError(
      "another process is using this GPU's hardware counters (a profiler, or another "
      "timeroof on this GPU; CUPTI_ERROR_HARDWARE_BUSY in " +
          step + ")",
      "let it finish first, or measure timing only with --no-counters", true);
}

CounterAccessError describe_access_failure(CUptiResult status, const std::string& step) {
  const std::string message = check_detail::cupti_message(status);
  switch (status) {
    case CUPTI_ERROR_HARDWARE_BUSY:
      return counters_busy_error(step);
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES: {
      const std::string setting = admin_only_setting();
      return CounterAccessError(
          "GPU profiling is restricted to admin users (NVreg_RestrictProfilingToAdminUsers=1" +
              (setting.empty() ? std::string() : ", driver reports '" + setting + "'") +
              (geteuid() == 0 ? "" : "; timeroof runs as a normal user") + ")",
          "run as root, or add 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' to a "
          "file in /etc/modprobe.d/ and reload the nvidia module (or reboot)");
    }
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      return CounterAccessError(
          "another CUPTI client is attached to this process (Nsight Compute, Nsight Systems, "
          "or a tool loaded through CUDA_INJECTION64_PATH)",
          "run timeroof outside ncu/nsys and unset CUDA_INJECTION64_PATH");
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
      return CounterAccessError(
          "this GPU is virtualised (vGPU or passthrough without profiling support)",
          "enable profiling for the vGPU on the hypervisor (vGPU profile with "
          "'enable_profiling=1') or run on bare metal");
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
      return CounterAccessError("CMP (mining) GPUs do not expose hardware counters", "");
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
      return CounterAccessError(
          "CUPTI does not support counters on this device (" + step + ": " + message + ")",
          "use a GPU of compute capability 7.5 or newer with a matching "
          "driver");
    default:
      return CounterAccessError(step + " failed: " + message,
                                "check that the driver matches CUDA " +
                                    std::to_string(CUDART_VERSION / 1000) +
                                    " and that no other profiler is running");
  }
}

namespace {

// Adds the wall time of its scope to a phase total.
class PhaseTimer {
 public:
  explicit PhaseTimer(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() { total_ += seconds_since(start_); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

#define TR_ACCESS_CHECK(call)                                                          \
  do {                                                                                 \
    const CUptiResult tr_status_ = (call);                                             \
    if (tr_status_ != CUPTI_SUCCESS) throw describe_access_failure(tr_status_, #call); \
  } while (0)
// A collection's CUPTI calls: another process taking the counters between our
// collections (CUPTI holds them per enablement) is CounterAccessError::busy, so
// the runner can wait and collect again; anything else is the library's error.
#define TR_COLLECT_CHECK(call)                                                     \
  do {                                                                             \
    const CUptiResult tr_status_ = (call);                                         \
    if (tr_status_ == CUPTI_ERROR_HARDWARE_BUSY) throw counters_busy_error(#call); \
    if (tr_status_ != CUPTI_SUCCESS)                                               \
      ::timeroof::check_detail::fail_cupti(tr_status_, #call, __FILE__, __LINE__); \
  } while (0)

const char* level_name(CUpti_Profiler_Support_Level level) {
  switch (level) {
    case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED:
      return "unsupported";
    case CUPTI_PROFILER_CONFIGURATION_DISABLED:
      return "disabled";
    case CUPTI_PROFILER_CONFIGURATION_SUPPORTED:
      return "supported";
    default:
      return "unknown";
  }
}

// Explains cuptiProfilerDeviceSupported's verdict feature by feature.
void require_device_supported(int device) {
  CUpti_Profiler_DeviceSupported_Params params{CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
  params.cuDevice = device;
  params.api = CUPTI_PROFILER_RANGE_PROFILING;
  TR_ACCESS_CHECK(cuptiProfilerDeviceSupported(&params));
  if (params.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return;
  struct Feature {
    CUpti_Profiler_Support_Level level;
    const char* what;
    const char* fix;
  };
  const Feature features[] = {
      {params.architecture, "the GPU architecture has no range-profiler support",
       "use a GPU of compute capability 7.5 or newer"},
      {params.sli, "SLI is enabled", "disable SLI"},
      {params.vGpu, "the GPU is a vGPU without profiling enabled",
       "enable profiling for this vGPU on the hypervisor, or run on bare metal"},
      {params.confidentialCompute, "confidential computing is enabled",
       "disable confidential computing mode on this GPU"},
      {params.cmp, "CMP (mining) GPUs do not expose counters", ""},
      {params.wsl, "profiling under WSL is not supported by this driver",
       "update the Windows NVIDIA driver, or run on Linux"},
  };
  for (const Feature& f : features) {
    if (f.level != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
      throw CounterAccessError(std::string(f.what) + " (" + level_name(f.level) + ")", f.fix);
    }
  }
  throw CounterAccessError("CUPTI reports the device as not supported for range profiling", "");
}

}  // namespace

ProfilerInitialization::ProfilerInitialization() {
  CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  TR_ACCESS_CHECK(cuptiProfilerInitialize(&init));
}

ProfilerInitialization::~ProfilerInitialization() {
  CUpti_Profiler_DeInitialize_Params deinit{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
  TR_CUPTI_WARN(cuptiProfilerDeInitialize(&deinit));
}

std::string chip_name(int device) {
  CUpti_Device_GetChipName_Params params{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  params.deviceIndex = static_cast<std::size_t>(device);
  TR_ACCESS_CHECK(cuptiDeviceGetChipName(&params));
  return params.pChipName;
}

namespace {
int current_device() {
  int device = 0;
  TR_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}
}  // namespace

ProfilerSession::ProfilerSession() : ProfilerSession(current_context(), current_device()) {}

ProfilerSession::ProfilerSession(CUcontext context, int device) : context_(context) {
  require_device_supported(device);
  chip_ = chip_name(device);

  CUpti_Profiler_GetCounterAvailability_Params avail{
      CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  avail.ctx = context_;
  TR_ACCESS_CHECK(cuptiProfilerGetCounterAvailability(&avail));
  availability_.resize(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = availability_.data();
  TR_ACCESS_CHECK(cuptiProfilerGetCounterAvailability(&avail));

  enable();  // proves the counters can be read before any work is queued
}

ProfilerSession::~ProfilerSession() {
  launch_.reset();
  disable();
}

void ProfilerSession::enable() {
  if (profiler_) return;
  const PhaseTimer timer(phases_.enable);
  CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  enable.ctx = context_;
  TR_ACCESS_CHECK(cuptiRangeProfilerEnable(&enable));
  profiler_ = enable.pRangeProfilerObject;
}

void ProfilerSession::disable() noexcept {
  if (!profiler_) return;
  const PhaseTimer timer(phases_.disable);
  CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
  disable.pRangeProfilerObject = profiler_;
  TR_CUPTI_WARN(cuptiRangeProfilerDisable(&disable));
  profiler_ = nullptr;
}

// One collection (SetConfig .. DecodeData) per enablement of the range
// profiler, as NVIDIA's samples do: a second SetConfig on the same enablement
// crashed CUPTI 13 in user replay (seen on an H200).
class ProfilerSession::Collection {
 public:
  explicit Collection(ProfilerSession& session) : session_(session) {
    session_.enable();
    ++session_.phases_.collections;
  }
  ~Collection() {
    if (!session_.keep_enabled_) session_.disable();
  }
  Collection(const Collection&) = delete;
  Collection& operator=(const Collection&) = delete;

 private:
  ProfilerSession& session_;
};

// Everything CUPTI points into between SetConfig and DecodeData: it must stay
// alive (and unmoved) for the whole collection.
struct ProfilerSession::CounterData {
  ConfigImage config;
  std::vector<std::uint8_t> image;
};

ProfilerSession::CounterData ProfilerSession::prepare(const std::vector<std::string>& metrics,
                                                      std::size_t max_ranges, int range_mode,
                                                      int replay_mode) {
  ConfigImage config;
  {
    const PhaseTimer timer(phases_.configure);
    config = build_config(chip_, metrics, availability_);
  }
  return prepare(std::move(config), max_ranges, range_mode, replay_mode);
}

ProfilerSession::CounterData ProfilerSession::prepare(ConfigImage built, std::size_t max_ranges,
                                                      int range_mode, int replay_mode) {
  const PhaseTimer timer(phases_.configure);
  CounterData data{std::move(built), {}};
  const ConfigImage& config = data.config;
  std::vector<const char*> names = metric_name_pointers(config.metrics);

  // CUPTI's parameter blocks are filled field by field at each call, as its API
  // asks (`duplicates` pairs them with metric_host.cpp's by shape).
  CUpti_RangeProfiler_GetCounterDataSize_Params size{
      CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  size.pRangeProfilerObject = profiler_;
  size.pMetricNames = names.data();
  size.numMetrics = names.size();
  size.maxNumOfRanges = max_ranges;
  size.maxNumRangeTreeNodes = static_cast<std::uint32_t>(max_ranges);
  TR_COLLECT_CHECK(cuptiRangeProfilerGetCounterDataSize(&size));
  data.image.resize(size.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params image{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  image.pRangeProfilerObject = profiler_;
  image.counterDataSize = data.image.size();
  image.pCounterData = data.image.data();
  TR_COLLECT_CHECK(cuptiRangeProfilerCounterDataImageInitialize(&image));

  CUpti_RangeProfiler_SetConfig_Params set{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  set.pRangeProfilerObject = profiler_;
  set.configSize = config.bytes.size();
  set.pConfig = config.bytes.data();
  set.counterDataImageSize = data.image.size();
  set.pCounterDataImage = data.image.data();
  set.range = static_cast<CUpti_ProfilerRange>(range_mode);
  set.replayMode = static_cast<CUpti_ProfilerReplayMode>(replay_mode);
  set.maxRangesPerPass = max_ranges;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  TR_COLLECT_CHECK(cuptiRangeProfilerSetConfig(&set));
  return data;
}

ProfileResult ProfilerSession::decode(CounterData& data, const std::vector<bool>& keep) {
  const PhaseTimer timer(phases_.decode);
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = profiler_;
  TR_COLLECT_CHECK(cuptiRangeProfilerDecodeData(&decode));

  ProfileResult result;
  result.metrics = data.config.metrics;
  result.passes = data.config.passes;
  result.dropped_ranges = decode.numOfRangeDropped;
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = data.image.data();
  info.counterDataImageSize = data.image.size();
  TR_COLLECT_CHECK(cuptiRangeProfilerGetCounterDataInfo(&info));
  if (!evaluator_) evaluator_ = std::make_unique<MetricHost>(chip_, availability_);
  for (std::size_t r = 0; r < info.numTotalRanges; ++r) {
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params range{
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
    range.pCounterDataImage = data.image.data();
    range.counterDataImageSize = data.image.size();
    range.rangeIndex = r;
    range.rangeDelimiter = "/";
    TR_COLLECT_CHECK(cuptiRangeProfilerCounterDataGetRangeInfo(&range));
    const bool evaluate = keep.empty() || (r < keep.size() && keep[r]);
    result.ranges.push_back({range.rangeName ? range.rangeName : "",
                             evaluate ? evaluator_->evaluate(data.image, r, data.config.metrics)
                                      : std::vector<double>{}});
  }
  return result;
}

ProfileResult ProfilerSession::profile_kernels(const std::vector<std::string>& metrics,
                                               const std::function<void()>& work,
                                               std::size_t max_ranges) {
  const Collection collection(*this);
  CounterData data = prepare(metrics, max_ranges, CUPTI_AutoRange, CUPTI_KernelReplay);
  {
    const PhaseTimer timer(phases_.replay);
    run_between_start_and_stop([&] {
      work();
      TR_CUDA_CHECK(cudaDeviceSynchronize());
    });
  }
  return decode(data);
}

// Launches under measurement: their enablement and the images CUPTI writes into.
struct ProfilerSession::LaunchWindow {
  Collection collection;  // first: enabled before prepare, disabled last
  CounterData data;
  bool started = false;  // begin_passes' collection: between start_pass and stop_pass
};

void ProfilerSession::begin_launch(const ConfigImage& config, std::size_t max_launches) {
  if (launch_) throw usage_error("begin_launch: the previous launch was not ended");
  if (config.chip != chip_)
    throw usage_error("begin_launch: a configuration for " + config.chip + " on a " + chip_);
  if (max_launches < 1) throw usage_error("begin_launch: no launch to measure");
  // One range per kernel; the spare one shows kernels of other threads.
  launch_.reset(new LaunchWindow{
      Collection(*this), prepare(config, max_launches + 1, CUPTI_AutoRange, CUPTI_KernelReplay)});
  try {
    const PhaseTimer timer(phases_.start_stop);
    start_profiler();
  } catch (...) {
    launch_.reset();
    throw;
  }
}

ProfileResult ProfilerSession::end_launch() {
  if (!launch_) throw usage_error("end_launch: no launch is being measured");
  const std::unique_ptr<LaunchWindow> window = std::move(launch_);
  {
    const PhaseTimer timer(phases_.start_stop);
    stop_profiler();
  }
  return decode(window->data);
}

void ProfilerSession::begin_passes(const ConfigImage& config, std::size_t max_ranges) {
  if (launch_) throw usage_error("begin_passes: a collection is already open");
  if (config.chip != chip_)
    throw usage_error("begin_passes: a configuration for " + config.chip + " on a " + chip_);
  // One spare range shows a pass with more kernels than max_ranges (CUPTI drops
  // the rest silently in auto range).
  launch_.reset(new LaunchWindow{
      Collection(*this), prepare(config, max_ranges + 1, CUPTI_AutoRange, CUPTI_UserReplay)});
}

void ProfilerSession::start_pass() {
  if (!launch_ || launch_->started)
    throw usage_error("start_pass: no collection, or a pass is open");
  const PhaseTimer timer(phases_.start_stop);
  start_profiler();
  launch_->started = true;
}

bool ProfilerSession::stop_pass() {
  if (!launch_ || !launch_->started) throw usage_error("stop_pass: no pass is open");
  launch_->started = false;
  const PhaseTimer timer(phases_.start_stop);
  return stop_profiler();
}

ProfileResult ProfilerSession::end_passes() {
  if (!launch_ || launch_->started)
    throw usage_error("end_passes: no collection, or a pass is open");
  const std::unique_ptr<LaunchWindow> window = std::move(launch_);
  return decode(window->data);
}

void ProfilerSession::abandon_passes() noexcept {
  if (!launch_) return;
  if (launch_->started) stop_profiler_quietly();
  launch_.reset();
}

void ProfilerSession::start_profiler() {
  CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  start.pRangeProfilerObject = profiler_;
  TR_COLLECT_CHECK(cuptiRangeProfilerStart(&start));
}

bool ProfilerSession::stop_profiler() {
  CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  stop.pRangeProfilerObject = profiler_;
  TR_COLLECT_CHECK(cuptiRangeProfilerStop(&stop));
  return stop.isAllPassSubmitted != 0;
}

void ProfilerSession::stop_profiler_quietly() noexcept {
  CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  stop.pRangeProfilerObject = profiler_;
  TR_CUPTI_WARN(cuptiRangeProfilerStop(&stop));
}

bool ProfilerSession::run_between_start_and_stop(const std::function<void()>& body) {
  start_profiler();
  try {
    body();
  } catch (...) {
    stop_profiler_quietly();
    throw;
  }
  return stop_profiler();
}

namespace {

// A CUPTI device-memory checkpoint of the current context (RAII). The API
// lives in libcheckpoint.so beside libcupti; it is loaded on first use so that
// a missing copy only disables this replay mode, with a clear error.
class DeviceCheckpoint {
 public:
  explicit DeviceCheckpoint(CUcontext context) : api_(load()) {
    checkpoint_.ctx = context;
    checkpoint_.allowOverwrite = 1;
    TR_COLLECT_CHECK(api_.save(&checkpoint_));
  }
  ~DeviceCheckpoint() { TR_CUPTI_WARN(api_.free(&checkpoint_)); }
  DeviceCheckpoint(const DeviceCheckpoint&) = delete;
  DeviceCheckpoint& operator=(const DeviceCheckpoint&) = delete;
  void restore() { TR_COLLECT_CHECK(api_.restore(&checkpoint_)); }

 private:
  // The STRUCT_SIZE macro names the type unqualified.
  using CUpti_Checkpoint = NV::Cupti::Checkpoint::CUpti_Checkpoint;
  using Call = CUptiResult (*)(CUpti_Checkpoint*);
  struct Api {
    Call save, restore, free;
  };
  static Api load() {
    void* library = dlopen("libcheckpoint.so", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      throw environment_error(
          "CUPTI's checkpoint library libcheckpoint.so was not found (it ships with CUPTI in "
          "the CUDA toolkit's lib64); add that directory to LD_LIBRARY_PATH");
    }
    Api api{reinterpret_cast<Call>(dlsym(library, "cuptiCheckpointSave")),
            reinterpret_cast<Call>(dlsym(library, "cuptiCheckpointRestore")),
            reinterpret_cast<Call>(dlsym(library, "cuptiCheckpointFree"))};
    if (!api.save || !api.restore || !api.free)
      throw environment_error("libcheckpoint.so lacks the cuptiCheckpoint* functions");
    return api;  // the library stays loaded for the process
  }

  Api api_;
  CUpti_Checkpoint checkpoint_{CUpti_Checkpoint_STRUCT_SIZE};
};

}  // namespace

ProfileResult ProfilerSession::profile_ranges(const std::vector<std::string>& metrics,
                                              const std::vector<UserRange>& ranges,
                                              ReplayState state) {
  if (ranges.empty()) throw usage_error("profile_ranges: no ranges to profile");
  // Room for at least 64 ranges, as NVIDIA's range_profiling sample configures.
  return user_replay(
      metrics, std::max<std::size_t>(ranges.size(), 64), CUPTI_UserRange, state, [&] {
        for (const UserRange& range : ranges) {
          if (range.setup) {
            range.setup();
            TR_CUDA_CHECK(cudaDeviceSynchronize());
          }
          CUpti_RangeProfiler_PushRange_Params push{
              CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
          push.pRangeProfilerObject = profiler_;
          push.pRangeName = range.name.c_str();
          TR_COLLECT_CHECK(cuptiRangeProfilerPushRange(&push));
          range.run();
          TR_CUDA_CHECK(cudaDeviceSynchronize());
          CUpti_RangeProfiler_PopRange_Params pop{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
          pop.pRangeProfilerObject = profiler_;
          TR_COLLECT_CHECK(cuptiRangeProfilerPopRange(&pop));
        }
      });
}

ProfileResult ProfilerSession::profile_call_kernels(const std::vector<std::string>& metrics,
                                                    const UserRange& call, std::size_t max_kernels,
                                                    ReplayState state) {
  // CUPTI silently ignores kernels beyond its range capacity in auto-range mode
  // (dropped count 0, seen on an H200): one spare range shows an overflow.
  ProfileResult result = user_replay(
      metrics, max_kernels + 1, CUPTI_AutoRange, state,
      [&] {
        call.run();
        TR_CUDA_CHECK(cudaDeviceSynchronize());
      },
      call.setup);
  if (result.ranges.size() > max_kernels) {
    result.dropped_ranges = std::max<std::size_t>(result.dropped_ranges, 1);  // at least
    result.ranges.resize(max_kernels);
  }
  return result;
}

std::vector<ProfileResult> ProfilerSession::profile_call_batch(
    const std::vector<std::string>& metrics, const std::vector<BatchedCall>& calls,
    ReplayState state) {
  if (calls.empty()) throw usage_error("profile_call_batch: no calls to profile");
  // Which ranges belong to whom: launch order is prelude, run, prelude, run, ...
  std::vector<bool> keep;
  std::vector<std::size_t> first_range;  // of each call's run
  for (const BatchedCall& call : calls) {
    keep.insert(keep.end(), call.prelude_kernels, false);
    first_range.push_back(keep.size());
    keep.insert(keep.end(), call.kernels, true);
  }
  const std::size_t expected = keep.size();
  // One spare range shows kernels beyond the expected count (see profile_call_kernels).
  ProfileResult all = user_replay(
      metrics, expected + 1, CUPTI_AutoRange, state,
      [&] {
        for (const BatchedCall& call : calls) {
          if (call.prelude) call.prelude();
          call.run();
          TR_CUDA_CHECK(cudaDeviceSynchronize());
        }
      },
      nullptr, keep);
  if (all.ranges.size() != expected) {
    throw KernelCountMismatch(
        "profile_call_batch: " + std::to_string(calls.size()) + " calls declared " +
        std::to_string(expected) + " kernels with their preludes, CUPTI recorded " +
        (all.ranges.size() > expected ? "more" : std::to_string(all.ranges.size())));
  }
  std::vector<ProfileResult> results;
  for (std::size_t c = 0; c < calls.size(); ++c) {
    ProfileResult& one = results.emplace_back();
    one.metrics = all.metrics;
    one.passes = all.passes;
    one.dropped_ranges = all.dropped_ranges;
    for (std::size_t k = 0; k < calls[c].kernels; ++k) {
      RangeValues& range = all.ranges[first_range[c] + k];
      one.ranges.push_back({std::to_string(k), std::move(range.values)});
    }
  }
  return results;
}

ProfileResult ProfilerSession::user_replay(const std::vector<std::string>& metrics,
                                           std::size_t max_ranges, int range_mode,
                                           ReplayState state,
                                           const std::function<void()>& pass_body,
                                           const std::function<void()>& before_pass,
                                           const std::vector<bool>& keep) {
  TR_CUDA_CHECK(cudaDeviceSynchronize());
  std::unique_ptr<DeviceCheckpoint> checkpoint;
  if (state == ReplayState::checkpoint) checkpoint = std::make_unique<DeviceCheckpoint>(context_);
  const Collection collection(*this);
  CounterData data = prepare(metrics, max_ranges, range_mode, CUPTI_UserReplay);

  // CUPTI decides how many passes it needs; a bound guards against a loop that
  // never reports completion.
  const std::size_t max_passes = data.config.passes + 2;
  {
    const PhaseTimer timer(phases_.replay);
    bool all_submitted = false;
    for (std::size_t pass = 0; !all_submitted; ++pass) {
      if (pass >= max_passes) {
        throw Error(ExitCode::environment, "CUPTI user replay did not finish after " +
                                               std::to_string(pass) + " passes (expected " +
                                               std::to_string(data.config.passes) + ")");
      }
      if (checkpoint && pass > 0) checkpoint->restore();
      if (before_pass) {  // outside Start/Stop: its kernels are not ranges
        before_pass();
        TR_CUDA_CHECK(cudaDeviceSynchronize());
      }
      all_submitted = run_between_start_and_stop(pass_body);
    }
    if (checkpoint) checkpoint->restore();  // leave the state as the caller had it
  }
  return decode(data, keep);
}

}  // namespace timeroof
