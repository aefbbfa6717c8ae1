#include "gpu/device.hpp"

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <cupti_version.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "core/versions.hpp"
#include "gpu/check.hpp"
#include "gpu/check_cublas.hpp"
#include "gpu/check_cupti.hpp"
#include "gpu/nvml.hpp"

namespace timeroof {

std::string cudnn_version_text(std::size_t version) {
  return major_minor_patch_text(version);
}

namespace {

std::string uuid_text(const cudaUUID_t& uuid) {
  std::string text = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    text += hex;
    if (i == 3 || i == 5 || i == 7 || i == 9) text += '-';
  }
  return text;
}

SoftwareVersions software_versions(const Nvml& nvml) {
  SoftwareVersions v;
  int driver = 0, runtime = 0;
  TR_CUDA_CHECK(cudaDriverGetVersion(&driver));
  TR_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  v.cuda_driver = cuda_version_text(driver);
  v.cuda_runtime = cuda_version_text(runtime);
  v.driver = nvml.driver_version();
  const std::size_t cudnn = cudnnGetVersion();  // major*10000 + minor*100 + patch (cuDNN 9)
  v.cudnn = cudnn_version_text(cudnn);
  int major = 0, minor = 0, patch = 0;
  TR_CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &major));
  TR_CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &minor));
  TR_CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
  v.cublas = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  std::uint32_t cupti = 0;
  TR_CUPTI_CHECK(cuptiGetVersion(&cupti));
  v.cupti = std::to_string(cupti);
  return v;
}
}  // namespace

std::string pci_bus_id(int index) {
  char text[32] = {};
  TR_CUDA_CHECK(cudaDeviceGetPCIBusId(text, sizeof text, index));
  return text;
}

GpuCount count_gpus() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess && count > 0) return {count, {}};
  cudaGetLastError();  // clear the sticky-free error so later calls report their own
  if (status == cudaSuccess) return {0, "the NVIDIA driver reports no CUDA devices"};
  if (status == cudaErrorInsufficientDriver)
    return {0,
            "no NVIDIA driver is loaded (cudaErrorInsufficientDriver): no GPU on this machine, "
            "or the driver is older than CUDA " +
                cuda_version_text(CUDART_VERSION) + " needs"};
  if (status == cudaErrorNoDevice)
    return {0, "no CUDA-capable GPU found (cudaErrorNoDevice); check CUDA_VISIBLE_DEVICES"};
  return {0, std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status)};
}

void select_gpu(int index) {
  const GpuCount gpus = count_gpus();
  if (gpus.count == 0) throw environment_error(gpus.why_none);
  if (index < 0 || index >= gpus.count) {
    throw usage_error("--device " + std::to_string(index) + " is out of range: this machine has " +
                      std::to_string(gpus.count) + " GPU(s), indices 0.." +
                      std::to_string(gpus.count - 1));
  }
  TR_CUDA_CHECK(cudaSetDevice(index));
}

GpuInfo identify_gpu(int index) {
  cudaDeviceProp props{};
  TR_CUDA_CHECK(cudaGetDeviceProperties(&props, index));
  GpuInfo gpu;
  gpu.index = index;
  gpu.name = props.name;
  gpu.uuid = uuid_text(props.uuid);
  gpu.pci_bus_id = pci_bus_id(index);
  gpu.cc_major = props.major;
  gpu.cc_minor = props.minor;
  gpu.sm_count = props.multiProcessorCount;
  gpu.l2_bytes = props.l2CacheSize;
  gpu.memory_bytes = static_cast<std::int64_t>(props.totalGlobalMem);
  gpu.memory_bus_bits = props.memoryBusWidth;
  gpu.shared_per_sm_bytes = static_cast<std::int64_t>(props.sharedMemPerMultiprocessor);
  return gpu;
}

namespace {

// The clocks NVML reads (the device attributes' maxima where NVML is missing).
void add_clocks(GpuInfo& gpu, const Nvml& nvml) {
  int sm_khz = 0, mem_khz = 0;
  TR_CUDA_CHECK(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, gpu.index));
  TR_CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, gpu.index));
  using C = Nvml::Clock;
  using W = Nvml::Which;
  gpu.sm_clock_max_hz = nvml.clock_hz(gpu.pci_bus_id, C::sm, W::max);
  if (!gpu.sm_clock_max_hz && sm_khz > 0) gpu.sm_clock_max_hz = sm_khz * 1e3;
  gpu.sm_clock_base_hz = nvml.clock_hz(gpu.pci_bus_id, C::sm, W::base);
  gpu.sm_clock_current_hz = nvml.clock_hz(gpu.pci_bus_id, C::sm, W::current);
  gpu.mem_clock_max_hz = nvml.clock_hz(gpu.pci_bus_id, C::memory, W::max);
  if (!gpu.mem_clock_max_hz && mem_khz > 0) gpu.mem_clock_max_hz = mem_khz * 1e3;
  gpu.mem_clock_current_hz = nvml.clock_hz(gpu.pci_bus_id, C::memory, W::current);
}

}  // namespace

GpuInfo query_gpu(int index) {
  select_gpu(index);
  GpuInfo gpu = identify_gpu(index);
  const Nvml nvml;
  add_clocks(gpu, nvml);
  gpu.versions = software_versions(nvml);
  return gpu;
}

GpuInfo observe_gpu(int index) {
  GpuInfo gpu = identify_gpu(index);
  const Nvml nvml;
  add_clocks(gpu, nvml);
  int driver = 0;
  TR_CUDA_CHECK(cudaDriverGetVersion(&driver));
  gpu.versions.cuda_driver = cuda_version_text(driver);
  gpu.versions.driver = nvml.driver_version();
  return gpu;
}

Clocks read_clocks(int index) {
  return ClockReader(index).read();
}

ClockReader::ClockReader(int index)
    : nvml_(std::make_unique<Nvml>()), pci_bus_id_(pci_bus_id(index)) {}

ClockReader::~ClockReader() = default;

Clocks ClockReader::read() const {
  return {nvml_->clock_hz(pci_bus_id_, Nvml::Clock::sm, Nvml::Which::current),
          nvml_->clock_hz(pci_bus_id_, Nvml::Clock::memory, Nvml::Which::current), std::nullopt};
}

Clocks ClockReader::read_with_power() const {
  Clocks clocks = read();
  PowerSample& power = clocks.power.emplace();
  power.at_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  power.energy_j = nvml_->energy_j(pci_bus_id_);
  power.temperature_c = nvml_->temperature_c(pci_bus_id_);
  power.clock_event_reasons = nvml_->clock_event_reasons(pci_bus_id_).value_or(0);
  return clocks;
}

std::optional<double> ClockReader::power_limit_w() const {
  return nvml_->power_limit_w(pci_bus_id_);
}

}  // namespace timeroof
