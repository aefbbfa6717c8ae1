#include "core/error.hpp"
#include "src/cli/gpu_backend.hpp"
#include "src/cli/sweep_backend.hpp"

namespace timeroof::cli {

namespace {
constexpr const char* kWhy =
    "this timeroof was built without the CUDA toolkit (analysis-only: report, export, import); "
    "install the CUDA toolkit and cuDNN, then rebuild to measure GPUs";
}

bool built_with_cuda() {
  return false;
}
GpuAvailability find_gpus() {
  return {0, kWhy};
}
GpuInfo inspect_gpu(int) {
  throw environment_error(kWhy);
}
GpuInfo describe_gpu(int) {
  throw environment_error(kWhy);
}
GpuInfo identify_gpu(int) {
  throw environment_error(kWhy);
}
GpuInfo observe_gpu(int) {
  throw environment_error(kWhy);
}
std::vector<std::string> supported_chips() {
  return {};
}
std::vector<MetricDescription> chip_metrics(const std::string&) {
  throw environment_error(kWhy);
}
std::size_t count_passes(const std::string&, const std::vector<std::string>&) {
  throw environment_error(kWhy);
}
std::vector<std::string> unknown_metric_names(const std::string&, const std::vector<std::string>&) {
  return {};
}
std::size_t plan_passes(const std::string&, Precision, MathMode, const std::vector<std::string>&) {
  throw environment_error(kWhy);
}
ProfileMetricPlan profile_metric_plan(const std::string&) {
  throw environment_error(kWhy);
}
std::vector<std::string> known_ceiling_names() {
  return {};
}
void measure_machine(Machine&, const CeilingOptions&) {
  throw environment_error(kWhy);
}
Machine measure_interconnect(const std::vector<int>&, bool) {
  throw environment_error(kWhy);
}
nlohmann::json measure_host_window(int, const std::vector<std::string>&, bool, int) {
  throw environment_error(kWhy);
}

ExitCode measure_sweep(const SweepRequest&, ResultsStore&, Run&, bool) {
  throw environment_error(kWhy);
}
ExitCode serve_timing_worker(int) {
  throw environment_error(kWhy);
}
ExitCode serve_device_worker(int) {
  throw environment_error(kWhy);
}

}  // namespace timeroof::cli
