// The CUPTI profiler host API: metric names, config images and pass counts for
// a chip, with or without a GPU (CUPTI accepts a chip name alone), and the
// evaluation of counter data into metric values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct CUpti_Profiler_Host_Object;

namespace timeroof {

// The metric names as the C strings CUPTI's parameter blocks take; valid while
// `metrics` lives.
std::vector<const char*> metric_name_pointers(const std::vector<std::string>& metrics);

// A range-profiler configuration: what to collect and in how many replay passes.
struct ConfigImage {
  std::string chip;
  std::vector<std::string> metrics;
  std::vector<std::uint8_t> bytes;
  std::size_t passes = 0;
};

// Owns one CUPTI profiler host object for a chip (RAII, move-only).
class MetricHost {
 public:
  // Chip names this CUPTI build knows ("GA100", "GH100", ...).
  static std::vector<std::string> supported_chips();

  // `availability` is the counter availability image of a live context, or
  // empty for offline use. An unknown chip is a usage error naming the known ones.
  explicit MetricHost(const std::string& chip, const std::vector<std::uint8_t>& availability = {});
  ~MetricHost();
  MetricHost(MetricHost&& other) noexcept;
  MetricHost& operator=(MetricHost&& other) noexcept;
  MetricHost(const MetricHost&) = delete;
  MetricHost& operator=(const MetricHost&) = delete;

  const std::string& chip() const noexcept { return chip_; }
  CUpti_Profiler_Host_Object* get() const noexcept { return object_; }

  // Base metric names of every type (counter, ratio, throughput), without rollups.
  std::vector<std::string> base_metrics() const;
  // Whether a full metric name (with rollup/submetric, e.g. "dram__bytes.sum") exists.
  bool has_metric(const std::string& name) const;
  // What CUPTI says of a metric (base name or full name): its type ("counter",
  // "ratio", "throughput"), the unit of its values (e.g. "byte", "nsecond"), the
  // hardware unit that counts it (e.g. "dram") and a one-line description. A
  // usage error for a name the chip does not have.
  struct Properties {
    std::string type;
    std::string unit;
    std::string hw_unit;
    std::string description;
  };
  Properties properties(const std::string& name) const;

  // Values of `metrics` for one range of decoded counter data.
  std::vector<double> evaluate(const std::vector<std::uint8_t>& counter_data, std::size_t range,
                               const std::vector<std::string>& metrics) const;

 private:
  std::string chip_;
  CUpti_Profiler_Host_Object* object_ = nullptr;
};

// Builds the config image for `metrics` on `chip` (a fresh host object, since
// CUPTI accumulates added metrics per object). A name the chip does not have is
// a usage error that names it.
ConfigImage build_config(const std::string& chip, const std::vector<std::string>& metrics,
                         const std::vector<std::uint8_t>& availability = {});

}  // namespace timeroof
