// The metric catalog: every quantity the roofline model reads from counters
// (core/quantities.hpp: FLOPs per precision and Tensor-Core path, bytes per
// memory level, time, clocks), written per chip family as a weighted sum of
// CUPTI metrics, and the pass planner that collects only what one operator needs.
//
// Conventions (settled with counters on an H200, GH100, CUPTI 13):
// - `sm__sass_thread_inst_executed_op_*_pred_on` count thread-level SASS
//   instructions; a packed HFMA2 (fp16 and bf16 alike) counts once, so packed
//   half code is 4 x hfma + 2 x hadd + 2 x hmul FLOPs (ncu's weights); FFMA is 2,
//   FADD / FMUL 1. CUDA-core fp16 and bf16 share these counters: one class, half.
// - `sm__ops_path_tensor_*` count Tensor-Core FLOPs (ops for int8) exactly. A
//   chip's all-path total is the sum of its per-path metrics (checked against
//   the metrics' raw counters), so the per-path split costs no extra counter.
// - Tensor quantities are dense work (`*_sparsity_off`): they fit the fp16
//   Conv2D set in 2 passes on GH100 where the all-sparsity metrics need 3. 2:4
//   structured-sparse work is its own quantity (`*_sparse`), collected on request.
// - Never `512 x sm__inst_executed_pipe_tensor`: on Hopper it counts non-MMA
//   instructions too.
// Per-cycle `.peak_sustained` roofs are read once per run by theoretical_peaks;
// info(quantity).roof links each quantity to the ceiling it is divided by.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/quantities.hpp"
#include "core/vocabulary.hpp"
#include "counters/metric_host.hpp"

namespace timeroof {

// weight x metric, one term of a quantity's expression.
struct MetricTerm {
  std::string metric;  // full CUPTI name with rollup, e.g. "dram__bytes_read.sum"
  double weight = 1;
};
using MetricExpression = std::vector<MetricTerm>;

// The quantities of one chip family as CUPTI metric expressions.
class MetricCatalog {
 public:
  // The family of a CUPTI chip name ("GH100", "AD102", ...); an unknown chip is a
  // usage error naming the supported families and their chips.
  static MetricCatalog for_chip(const std::string& chip);
  // Family names with their chips, e.g. "GA10x (GA102, GA103, ...)".
  static std::vector<std::string> supported_families();

  const std::string& chip() const noexcept { return chip_; }
  const std::string& family() const noexcept { return family_; }
  bool has(Quantity quantity) const { return expressions_.count(quantity) != 0; }
  // The expression of a quantity; a usage error if the chip has no counter for it.
  const MetricExpression& expression(Quantity quantity) const;
  const std::map<Quantity, MetricExpression>& expressions() const noexcept { return expressions_; }
  // Every distinct metric of every expression, sorted.
  std::vector<std::string> metrics() const;

 private:
  MetricCatalog(std::string chip, std::string family, std::map<Quantity, MetricExpression> e)
      : chip_(std::move(chip)), family_(std::move(family)), expressions_(std::move(e)) {}
  std::string chip_;
  std::string family_;
  std::map<Quantity, MetricExpression> expressions_;
};

// What one operator's counters must say.
struct OperatorNeeds {
  Precision precision = Precision::fp32;
  MathMode math = MathMode::tensor;  // fp32 with Tensor Cores runs as tf32
  bool l1 = true;
  bool l2 = true;
  bool dram = true;
  bool dram_clock = false;   // the SM clock is always collected
  bool tensor_paths = true;  // per-path split (free where the total is the paths' sum)
  bool sparse = false;       // 2:4 structured-sparse Tensor-Core work too
};

// The quantities an operator needs, chip-independent: duration, SM clock, the
// CUDA-core FLOPs its precision runs (plus fp32 for epilogues and gates, half
// for fp16/bf16/fp8), the one Tensor-Core type it may use (and its paths), and
// the requested memory levels. The planner drops what a chip has no counter for.
std::vector<Quantity> quantities_for(const OperatorNeeds& needs);

// How an operator's value of a user's extra metric (--metrics) is formed from its
// kernels' values. sum: a counter's .sum or .avg (a count, or its mean over the
// chip's units, adds up over kernels run one after another); max / min: a
// counter's .max / .min; duration_weighted_mean: everything else (ratios,
// throughputs, .pct_of_peak_*, .per_second, .per_cycle_*), each kernel weighted by
// its gpu__time_duration: a rate over the call's time, exact where the rate's
// denominator is elapsed time (.per_second, pct_of_peak_sustained_elapsed) and an
// approximation otherwise (e.g. *_active: active cycles need not follow time).
enum class MetricTotal { sum, max, min, duration_weighted_mean };
const char* to_string(MetricTotal total);
// By CUPTI's type of the metric ("counter", "ratio", "throughput") and its name.
MetricTotal metric_total(const std::string& name, const std::string& type);

// What any kernel of a profiled program may do (`timeroof profile`, whose kernels
// come with no precision): duration and SM clock, the work of every precision
// class (all-path totals and, free where the total is their sum, the paths),
// every memory level. Not 2:4 sparse work (an extra pass for what dense models
// never run) nor the DRAM clock.
std::vector<Quantity> quantities_for_any_kernel();

// A raw metric a user added to the plan.
struct ExtraMetric {
  std::string name;  // full CUPTI name, e.g. "sm__warps_active.avg.pct_of_peak_sustained_active"
  MetricTotal total = MetricTotal::sum;
  bool in_catalog = false;  // the catalog collects it anyway: its total stays the catalog's
};

// What a range profiler must collect for a set of quantities on one chip.
struct CollectionPlan {
  std::string chip;
  std::string family;
  std::vector<Quantity> quantities;   // collectable here, in request order, no repeats
  std::vector<Quantity> unavailable;  // requested, but this chip has no counter for it
  std::map<Quantity, MetricExpression> expressions;
  // distinct metrics of the expressions and of `extra`, sorted
  std::vector<std::string> metrics;
  std::vector<ExtraMetric> extra;  // the user's metrics (--metrics), in the order given
  ConfigImage config;              // build_config(chip, metrics): image and passes
  std::size_t passes() const noexcept { return config.passes; }
};

// `availability` is the live context's counter availability image, or empty offline.
// `extra_metrics` (raw CUPTI names) join the same config image, so they come from
// the same replay passes (the pass count may grow); a name the chip does not have
// is a usage error naming it and `timeroof metrics --filter`.
CollectionPlan plan_collection(const std::string& chip, const std::vector<Quantity>& quantities,
                               const std::vector<std::uint8_t>& availability = {},
                               const std::vector<std::string>& extra_metrics = {});

// The names of `metrics` that `chip` does not have (offline, no GPU), in order.
std::vector<std::string> unknown_metrics(const std::string& chip,
                                         const std::vector<std::string>& metrics);

// Applies the weights: each planned quantity = sum of weight x value. A planned
// metric missing from `values` is a usage error naming it and its quantity.
std::map<Quantity, double> evaluate(const CollectionPlan& plan,
                                    const std::map<std::string, double>& values);

}  // namespace timeroof
