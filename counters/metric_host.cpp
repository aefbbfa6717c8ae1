#include "counters/metric_host.hpp"

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>

#include <utility>

#include "gpu/check.hpp"
#include "gpu/check_cupti.hpp"

namespace timeroof {

std::vector<const char*> metric_name_pointers(const std::vector<std::string>& metrics) {
  std::vector<const char*> names;
  for (const std::string& m : metrics) names.push_back(m.c_str());
  return names;
}

std::vector<std::string> MetricHost::supported_chips() {
  CUpti_Profiler_Host_GetSupportedChips_Params params{
      CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE};
  TR_CUPTI_CHECK(cuptiProfilerHostGetSupportedChips(&params));
  return {params.ppChipNames, params.ppChipNames + params.numChips};
}

MetricHost::MetricHost(const std::string& chip, const std::vector<std::uint8_t>& availability)
    : chip_(chip) {
  bool known = false;
  std::string chips;
  for (const std::string& name : supported_chips()) {
    known = known || name == chip;
    chips += (chips.empty() ? "" : ", ") + name;
  }
  if (!known) {
    throw usage_error("chip '" + chip + "' is unknown to this CUPTI (" + chips +
                      "); use one of these names");
  }
  CUpti_Profiler_Host_Initialize_Params params{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  params.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  params.pChipName = chip_.c_str();
  params.pCounterAvailabilityImage = availability.empty() ? nullptr : availability.data();
  TR_CUPTI_CHECK(cuptiProfilerHostInitialize(&params));
  object_ = params.pHostObject;
}

MetricHost::~MetricHost() {
  if (!object_) return;
  CUpti_Profiler_Host_Deinitialize_Params params{
      CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  params.pHostObject = object_;
  TR_CUPTI_WARN(cuptiProfilerHostDeinitialize(&params));
}

MetricHost::MetricHost(MetricHost&& other) noexcept
    : chip_(std::move(other.chip_)), object_(std::exchange(other.object_, nullptr)) {}

MetricHost& MetricHost::operator=(MetricHost&& other) noexcept {
  if (this != &other) {
    MetricHost old(std::move(*this));
    chip_ = std::move(other.chip_);
    object_ = std::exchange(other.object_, nullptr);
  }
  return *this;
}

std::vector<std::string> MetricHost::base_metrics() const {
  std::vector<std::string> names;
  for (int type = 0; type < CUPTI_METRIC_TYPE__COUNT; ++type) {
    CUpti_Profiler_Host_GetBaseMetrics_Params params{
        CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
    params.pHostObject = object_;
    params.metricType = static_cast<CUpti_MetricType>(type);
    TR_CUPTI_CHECK(cuptiProfilerHostGetBaseMetrics(&params));
    names.insert(names.end(), params.ppMetricNames, params.ppMetricNames + params.numMetrics);
  }
  return names;
}

bool MetricHost::has_metric(const std::string& name) const {
  CUpti_Profiler_Host_GetMetricProperties_Params params{
      CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
  params.pHostObject = object_;
  params.pMetricName = name.c_str();
  return cuptiProfilerHostGetMetricProperties(&params) == CUPTI_SUCCESS;
}

MetricHost::Properties MetricHost::properties(const std::string& name) const {
  CUpti_Profiler_Host_GetMetricProperties_Params params{
      CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
  params.pHostObject = object_;
  params.pMetricName = name.c_str();
  if (cuptiProfilerHostGetMetricProperties(&params) != CUPTI_SUCCESS)
    throw usage_error("no metric '" + name + "' on " + chip_ +
                      "; list them with `timeroof metrics --chip " + chip_ + "`");
  static const char* const kTypes[] = {"counter", "ratio", "throughput"};
  const auto text = [](const char* s) { return s ? std::string(s) : std::string(); };
  const int type = static_cast<int>(params.metricType);
  return {type >= 0 && type < 3 ? kTypes[type] : "unknown", text(params.pDimUnit),
          text(params.pHwUnit), text(params.pDescription)};
}

std::vector<double> MetricHost::evaluate(const std::vector<std::uint8_t>& counter_data,
                                         std::size_t range,
                                         const std::vector<std::string>& metrics) const {
  std::vector<const char*> names = metric_name_pointers(metrics);
  std::vector<double> values(metrics.size());
  CUpti_Profiler_Host_EvaluateToGpuValues_Params params{
      CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
  params.pHostObject = object_;
  params.pCounterDataImage = counter_data.data();
  params.counterDataImageSize = counter_data.size();
  params.rangeIndex = range;
  params.ppMetricNames = names.data();
  params.numMetrics = names.size();
  params.pMetricValues = values.data();
  TR_CUPTI_CHECK(cuptiProfilerHostEvaluateToGpuValues(&params));
  return values;
}

namespace {
std::string join_names(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}
}  // namespace

ConfigImage build_config(const std::string& chip, const std::vector<std::string>& metrics,
                         const std::vector<std::uint8_t>& availability) {
  MetricHost host(chip, availability);
  std::string unknown;
  for (const std::string& m : metrics)
    if (!host.has_metric(m)) unknown += (unknown.empty() ? "'" : ", '") + m + "'";
  if (!unknown.empty()) {
    throw usage_error(
        "unknown CUPTI metric " + unknown + " for chip " + chip +
        "; check the spelling (list the chip's metrics with `timeroof metrics --chip " + chip +
        "`)");
  }
  std::vector<const char*> names = metric_name_pointers(metrics);
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = host.get();
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  if (cuptiProfilerHostConfigAddMetrics(&add) != CUPTI_SUCCESS) {
    // Some metrics CUPTI lists cannot join a range profiler config (on GH100, e.g.
    // pcie__read_bytes.sum beside sm__cycles_elapsed.avg): name the first that fails
    // alone, a user's choice to fix.
    const auto refuse = [&](const std::string& m) {
      return usage_error("CUPTI metric '" + m +
                         "' cannot be collected by the range profiler on chip " + chip +
                         "; pick another (`timeroof metrics --chip " + chip + " --filter TEXT`)");
    };
    if (metrics.size() == 1) throw refuse(metrics.front());
    for (const std::string& m : metrics) {
      try {
        (void)build_config(chip, {m}, availability);
      } catch (const Error& e) {
        throw e.code() == ExitCode::usage ? e : refuse(m);
      }
    }
    throw usage_error("CUPTI cannot collect these " + std::to_string(metrics.size()) +
                      " metrics in one range profiler config on chip " + chip +
                      ", though each alone works (" + join_names(metrics) + "); drop one");
  }

  CUpti_Profiler_Host_GetConfigImageSize_Params size{
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = host.get();
  TR_CUPTI_CHECK(cuptiProfilerHostGetConfigImageSize(&size));
  ConfigImage config{chip, metrics, std::vector<std::uint8_t>(size.configImageSize), 0};
  CUpti_Profiler_Host_GetConfigImage_Params image{
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = host.get();
  image.configImageSize = config.bytes.size();
  image.pConfigImage = config.bytes.data();
  TR_CUPTI_CHECK(cuptiProfilerHostGetConfigImage(&image));

  CUpti_Profiler_Host_GetNumOfPasses_Params passes{
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.configImageSize = config.bytes.size();
  passes.pConfigImage = config.bytes.data();
  TR_CUPTI_CHECK(cuptiProfilerHostGetNumOfPasses(&passes));
  config.passes = passes.numOfPasses;
  return config;
}

}  // namespace timeroof
