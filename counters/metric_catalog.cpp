#include "counters/metric_catalog.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "core/error.hpp"

namespace timeroof {

namespace {

using Q = Quantity;
using Path = TensorPath;

// ---- Expressions shared by the families -------------------------------------

const std::string kSass = "sm__sass_thread_inst_executed_op_";
const std::string kTensor = "sm__ops_path_tensor_";

std::string sass(const std::string& op) {
  return kSass + op + "_pred_on.sum";
}
std::string tensor(const std::string& path) {
  return kTensor + path + ".sum";
}

using Expressions = std::map<Quantity, MetricExpression>;

// Time, clocks, CUDA-core FLOPs and bytes: the same names on every family but
// DRAM traffic, which Blackwell consumer parts call dram__bytes_op_read/write.
Expressions common(const std::string& dram_read = "dram__bytes_read.sum",
                   const std::string& dram_write = "dram__bytes_write.sum") {
  return {
      // gpu__time_duration counts nanoseconds.
      {Q::duration, {{"gpu__time_duration.sum", 1e-9}}},
      {Q::sm_clock, {{"sm__cycles_elapsed.avg.per_second", 1}}},
      {Q::dram_clock, {{"dram__cycles_elapsed.avg.per_second", 1}}},
      {Q::fp64_flops, {{sass("dfma"), 2}, {sass("dadd"), 1}, {sass("dmul"), 1}}},
      {Q::fp32_flops, {{sass("ffma"), 2}, {sass("fadd"), 1}, {sass("fmul"), 1}}},
      // One count per packed HFMA2 / HADD2 / HMUL2 thread instruction (fp16 and bf16).
      {Q::half_flops, {{sass("hfma"), 4}, {sass("hadd"), 2}, {sass("hmul"), 2}}},
      {Q::l1_bytes, {{"l1tex__t_bytes.sum", 1}}},
      // SM<->L2 traffic, the unit the L2 roof is measured in. Not lts__t_bytes:
      // on GA100/GH100 that also counts requests between the two L2 partitions
      // (srcunit ltcfabric), which depend on where lines sit from earlier work:
      // 1.5x the SM bytes on a copy, and up to 19% apart between runs on an H200.
      {Q::l2_bytes, {{"lts__t_sectors_srcunit_tex.sum", 32}}},
      {Q::dram_read_bytes, {{dram_read, 1}}},
      {Q::dram_write_bytes, {{dram_write, 1}}},
  };
}

// Blackwell datacenter parts with packed FP32 (FFMA2 / FADD2 / FMUL2, counted
// apart from FFMA): one count per packed thread instruction, two lanes each.
void add_packed_fp32(Expressions& e) {
  MetricExpression& fp32 = e[Q::fp32_flops];
  fp32.push_back({sass("ffma2"), 4});
  fp32.push_back({sass("fadd2"), 2});
  fp32.push_back({sass("fmul2"), 2});
}

MetricExpression terms(const std::vector<std::string>& metrics) {
  MetricExpression e;
  for (const std::string& m : metrics) e.push_back({m, 1});
  return e;
}

MetricExpression concat(MetricExpression a, const MetricExpression& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// One Tensor-Core type: the dense metrics of each path and the sparse ones.
struct TensorQuantities {
  Quantity all;
  std::optional<Quantity> mma_sync, wgmma, tcgen05;
  Quantity sparse;
};

const TensorQuantities kFp16{Q::tensor_fp16_flops, Q::tensor_fp16_mma_sync_flops,
                             Q::tensor_fp16_wgmma_flops, Q::tensor_fp16_tcgen05_flops,
                             Q::tensor_fp16_sparse_flops};
const TensorQuantities kBf16{Q::tensor_bf16_flops, Q::tensor_bf16_mma_sync_flops,
                             Q::tensor_bf16_wgmma_flops, Q::tensor_bf16_tcgen05_flops,
                             Q::tensor_bf16_sparse_flops};
const TensorQuantities kTf32{Q::tensor_tf32_flops, Q::tensor_tf32_mma_sync_flops,
                             Q::tensor_tf32_wgmma_flops, Q::tensor_tf32_tcgen05_flops,
                             Q::tensor_tf32_sparse_flops};
const TensorQuantities kFp8{Q::tensor_fp8_flops, std::nullopt, std::nullopt,
                            Q::tensor_fp8_tcgen05_flops, Q::tensor_fp8_sparse_flops};
const TensorQuantities kInt8{Q::tensor_int8_ops, Q::tensor_int8_mma_sync_ops,
                             Q::tensor_int8_wgmma_ops, Q::tensor_int8_tcgen05_ops,
                             Q::tensor_int8_sparse_ops};

// Metric stems per path (without "_sparsity_off/_on.sum"); an empty list means
// the chip has no such path for the type.
struct PathStems {
  std::vector<std::string> mma_sync, wgmma, tcgen05;
};

std::vector<std::string> with_suffix(const std::vector<std::string>& stems, const char* suffix) {
  std::vector<std::string> out;
  for (const std::string& s : stems) out.push_back(tensor(s + suffix));
  return out;
}

// A type on a chip with several paths: the total is the sum of the paths (their
// raw counters partition the all-path metric's), each path its own quantity.
void add_split_type(Expressions& e, const TensorQuantities& type, const PathStems& stems) {
  MetricExpression all;
  MetricExpression sparse;
  const auto add_path = [&](const std::optional<Quantity>& q, const std::vector<std::string>& s) {
    if (s.empty()) return;
    const MetricExpression dense = terms(with_suffix(s, "_sparsity_off"));
    if (q) e[*q] = dense;
    all = concat(all, dense);
    sparse = concat(sparse, terms(with_suffix(s, "_sparsity_on")));
  };
  add_path(type.mma_sync, stems.mma_sync);
  add_path(type.wgmma, stems.wgmma);
  add_path(type.tcgen05, stems.tcgen05);
  e[type.all] = all;
  e[type.sparse] = sparse;
}

// A type on a chip with one path (or whose path split has no metric): the total only.
void add_single_type(Expressions& e, const TensorQuantities& type,
                     const std::vector<std::string>& stems) {
  e[type.all] = terms(with_suffix(stems, "_sparsity_off"));
  e[type.sparse] = terms(with_suffix(stems, "_sparsity_on"));
}

// Ampere and Ada: mma.sync is the only path; CUPTI names it by source type.
Expressions ampere_ada(bool fp8) {
  Expressions e = common();
  add_single_type(e, kFp16, {"src_fp16_dst_fp16", "src_fp16_dst_fp32"});
  add_single_type(e, kBf16, {"src_bf16_dst_fp32"});
  add_single_type(e, kTf32, {"src_tf32_dst_fp32"});
  add_single_type(e, kInt8, {"src_int8"});
  if (fp8) add_single_type(e, kFp8, {"src_fp8"});
  e[Q::tensor_fp64_flops] = {{tensor("src_fp64"), 1}};
  return e;
}

// Hopper: mma.sync (HMMA/IMMA) and wgmma (HGMMA/IGMMA). FP8 has one metric, no
// per-path split (its raw counters look like a wgmma path's: QGMMA).
Expressions hopper() {
  Expressions e = common();
  add_split_type(
      e, kFp16,
      {{"op_hmma_src_fp16_dst_fp16", "op_hmma_src_fp16_dst_fp32"}, {"op_hgmma_src_fp16"}, {}});
  add_split_type(e, kBf16, {{"op_hmma_src_bf16_dst_fp32"}, {"op_hgmma_src_bf16_dst_fp32"}, {}});
  add_split_type(e, kTf32, {{"op_hmma_src_tf32_dst_fp32"}, {"op_hgmma_src_tf32_dst_fp32"}, {}});
  add_split_type(e, kInt8, {{"op_imma_src_int8"}, {"op_igmma_src_int8"}, {}});
  add_single_type(e, kFp8, {"src_fp8"});
  e[Q::tensor_fp64_flops] = {{tensor("src_fp64"), 1}};
  return e;
}

// Blackwell datacenter (sm_100/sm_103/sm_110), by metric name: mma.sync
// (HMMA/IMMA) and tcgen05.mma (UTCHMMA/UTCIMMA/UTCQMMA). FP8 is counted on
// UTCQMMA only; where CUPTI lumps fp8 with fp6/fp4 (kind::f8f6f4) so does this.
struct BlackwellOptions {
  bool packed_fp32 = true;
  bool utcimma = true;
  std::vector<std::string> fp8_stems;
};
Expressions blackwell(const BlackwellOptions& options) {
  Expressions e = common();
  if (options.packed_fp32) add_packed_fp32(e);
  add_split_type(e, kFp16,
                 {{"op_hmma_src_fp16_dst_fp16", "op_hmma_src_fp16_dst_fp32"},
                  {},
                  {"op_utchmma_src_fp16_dst_fp16", "op_utchmma_src_fp16_dst_fp32"}});
  add_split_type(e, kBf16, {{"op_hmma_src_bf16_dst_fp32"}, {}, {"op_utchmma_src_bf16_dst_fp32"}});
  add_split_type(e, kTf32, {{"op_hmma_src_tf32_dst_fp32"}, {}, {"op_utchmma_src_tf32_dst_fp32"}});
  if (options.utcimma)
    add_split_type(e, kInt8, {{"op_imma_src_int8"}, {}, {"op_utcimma_src_int8"}});
  else
    add_single_type(e, kInt8, {"op_imma_src_int8"});
  add_split_type(e, kFp8, {{}, {}, options.fp8_stems});
  e[Q::tensor_fp64_flops] = {{tensor("src_fp64"), 1}};
  return e;
}

// Blackwell consumer (sm_120/sm_121): mma.sync is the only path.
Expressions blackwell_consumer() {
  Expressions e = common("dram__bytes_op_read.sum", "dram__bytes_op_write.sum");
  add_single_type(e, kFp16, {"op_hmma_src_fp16_dst_fp16", "op_hmma_src_fp16_dst_fp32"});
  add_single_type(e, kBf16, {"op_hmma_src_bf16_dst_fp32"});
  add_single_type(e, kTf32, {"op_hmma_src_tf32_dst_fp32"});
  add_single_type(e, kInt8, {"op_imma_src_int8"});
  add_single_type(e, kFp8, {"src_fp8_dst_fp16", "src_fp8_dst_fp32"});
  e[Q::tensor_fp64_flops] = {{tensor("src_fp64"), 1}};
  return e;
}

struct Family {
  const char* name;
  std::vector<std::string> chips;
  Expressions (*build)();
};

const std::vector<Family>& families() {
  static const std::vector<Family> table = {
      {"GA100", {"GA100"}, [] { return ampere_ada(false); }},
      {"GA10x",
       {"GA102", "GA103", "GA104", "GA106", "GA107", "GA10B"},
       [] { return ampere_ada(false); }},
      {"AD10x", {"AD102", "AD103", "AD104", "AD106", "AD107"}, [] { return ampere_ada(true); }},
      {"GH100", {"GH100"}, hopper},
      {"GB100",
       {"GB100", "GB102"},
       [] {
         return blackwell(
             {true,
              true,
              {"op_utcqmma_src_fp4_fp6_fp8_dst_fp16", "op_utcqmma_src_fp4_fp6_fp8_dst_fp32"}});
       }},
      {"GB10B",
       {"GB10B"},
       [] {
         return blackwell(
             {false,
              true,
              {"op_utcqmma_src_fp4_fp6_fp8_dst_fp16", "op_utcqmma_src_fp4_fp6_fp8_dst_fp32"}});
       }},
      {"GB110",
       {"GB110"},
       [] {
         return blackwell(
             {true, false, {"op_utcqmma_src_fp8_dst_fp16", "op_utcqmma_src_fp8_dst_fp32"}});
       }},
      {"GB20x", {"GB202", "GB203", "GB205", "GB206", "GB207", "GB20B"}, blackwell_consumer},
  };
  return table;
}

}  // namespace

// ---- Quantities ---------------------------------------------------------------

// ---- Catalog ------------------------------------------------------------------

std::vector<std::string> MetricCatalog::supported_families() {
  std::vector<std::string> out;
  for (const Family& f : families()) {
    std::string chips;
    for (const std::string& c : f.chips) chips += (chips.empty() ? "" : ", ") + c;
    out.push_back(std::string(f.name) + " (" + chips + ")");
  }
  return out;
}

MetricCatalog MetricCatalog::for_chip(const std::string& chip) {
  for (const Family& f : families()) {
    if (std::find(f.chips.begin(), f.chips.end(), chip) == f.chips.end()) continue;
    Expressions e = f.build();
    // Integrated parts (Orin, Thor, GB10) share system memory: CUPTI lists no
    // dram__ metric for them, so DRAM traffic and clock are not counted there.
    if (chip == "GA10B" || chip == "GB10B" || chip == "GB20B")
      for (const Quantity q : {Q::dram_clock, Q::dram_read_bytes, Q::dram_write_bytes}) e.erase(q);
    return MetricCatalog(chip, f.name, std::move(e));
  }
  std::string list;
  for (const std::string& f : supported_families()) list += (list.empty() ? "" : "; ") + f;
  throw usage_error("no metric catalog for chip '" + chip + "'; supported families: " + list);
}

const MetricExpression& MetricCatalog::expression(Quantity quantity) const {
  const auto found = expressions_.find(quantity);
  if (found == expressions_.end())
    throw usage_error(std::string("chip ") + chip_ + " (" + family_ + ") has no counter for " +
                      to_string(quantity));
  return found->second;
}

std::vector<std::string> MetricCatalog::metrics() const {
  std::set<std::string> names;
  for (const auto& [quantity, expression] : expressions_)
    for (const MetricTerm& t : expression) names.insert(t.metric);
  return {names.begin(), names.end()};
}

// ---- Planner ------------------------------------------------------------------

std::vector<Quantity> quantities_for_any_kernel() {
  std::vector<Quantity> q;
  for (const QuantityInfo& i : all_quantities())
    if (!i.sparse && i.quantity != Q::dram_clock) q.push_back(i.quantity);
  return q;
}

std::vector<Quantity> quantities_for(const OperatorNeeds& needs) {
  std::vector<Quantity> q = {Q::duration, Q::sm_clock};
  if (needs.dram_clock) q.push_back(Q::dram_clock);

  // CUDA-core work: the operator's own precision, fp32 epilogues and gates
  // everywhere but fp64, half epilogues beside half and fp8 math.
  switch (needs.precision) {
    case Precision::fp64:
      q.push_back(Q::fp64_flops);
      break;
    case Precision::fp32:
    case Precision::tf32:
    case Precision::int8:
      q.push_back(Q::fp32_flops);
      break;
    case Precision::fp16:
    case Precision::bf16:
    case Precision::fp8:
      q.push_back(Q::half_flops);
      q.push_back(Q::fp32_flops);
      break;
  }

  if (needs.math == MathMode::tensor) {
    const TensorQuantities* type = nullptr;
    switch (needs.precision) {
      case Precision::fp64:
        q.push_back(Q::tensor_fp64_flops);
        break;
      case Precision::fp32:
      case Precision::tf32:
        type = &kTf32;
        break;
      case Precision::fp16:
        type = &kFp16;
        break;
      case Precision::bf16:
        type = &kBf16;
        break;
      case Precision::fp8:
        type = &kFp8;
        break;
      case Precision::int8:
        type = &kInt8;
        break;
    }
    if (type) {
      q.push_back(type->all);
      if (needs.tensor_paths)
        for (const auto& part : {type->mma_sync, type->wgmma, type->tcgen05})
          if (part) q.push_back(*part);
      if (needs.sparse) q.push_back(type->sparse);
    }
  }

  if (needs.l1) q.push_back(Q::l1_bytes);
  if (needs.l2) q.push_back(Q::l2_bytes);
  if (needs.dram) {
    q.push_back(Q::dram_read_bytes);
    q.push_back(Q::dram_write_bytes);
  }
  return q;
}

const char* to_string(MetricTotal total) {
  switch (total) {
    case MetricTotal::sum:
      return "sum";
    case MetricTotal::max:
      return "max";
    case MetricTotal::min:
      return "min";
    case MetricTotal::duration_weighted_mean:
      return "duration_weighted_mean";
  }
  return "?";
}

MetricTotal metric_total(const std::string& name, const std::string& type) {
  if (type == "counter") {
    if (name.ends_with(".sum") || name.ends_with(".avg")) return MetricTotal::sum;
    if (name.ends_with(".max")) return MetricTotal::max;
    if (name.ends_with(".min")) return MetricTotal::min;
  }
  return MetricTotal::duration_weighted_mean;
}

std::vector<std::string> unknown_metrics(const std::string& chip,
                                         const std::vector<std::string>& metrics) {
  const MetricHost host(chip);
  std::vector<std::string> unknown;
  for (const std::string& name : metrics)
    if (!host.has_metric(name)) unknown.push_back(name);
  return unknown;
}

CollectionPlan plan_collection(const std::string& chip, const std::vector<Quantity>& quantities,
                               const std::vector<std::uint8_t>& availability,
                               const std::vector<std::string>& extra_metrics) {
  const MetricCatalog catalog = MetricCatalog::for_chip(chip);
  CollectionPlan plan;
  plan.chip = chip;
  plan.family = catalog.family();
  std::set<std::string> metrics;
  for (const Quantity q : quantities) {
    const bool seen =
        std::find(plan.quantities.begin(), plan.quantities.end(), q) != plan.quantities.end() ||
        std::find(plan.unavailable.begin(), plan.unavailable.end(), q) != plan.unavailable.end();
    if (seen) continue;
    if (!catalog.has(q)) {
      plan.unavailable.push_back(q);
      continue;
    }
    plan.quantities.push_back(q);
    const MetricExpression& e = catalog.expression(q);
    plan.expressions[q] = e;
    for (const MetricTerm& t : e) metrics.insert(t.metric);
  }
  const std::set<std::string> catalog_metrics = metrics;
  if (!extra_metrics.empty()) {
    const MetricHost host(chip);
    for (const std::string& name : extra_metrics) {
      if (std::any_of(plan.extra.begin(), plan.extra.end(),
                      [&](const ExtraMetric& m) { return m.name == name; }))
        continue;
      if (!host.has_metric(name))
        throw usage_error("metric '" + name + "' does not exist on chip " + chip +
                          "; list its names with `timeroof metrics --chip " + chip +
                          " --filter TEXT`");
      plan.extra.push_back(
          {name, metric_total(name, host.properties(name).type), metrics.count(name) != 0});
    }
    for (const ExtraMetric& m : plan.extra) metrics.insert(m.name);
  }
  plan.metrics.assign(metrics.begin(), metrics.end());
  if (plan.metrics.empty()) {
    plan.config.chip = chip;
    return plan;
  }
  if (plan.extra.empty()) {
    plan.config = build_config(chip, plan.metrics, availability);
    return plan;
  }
  try {
    plan.config = build_config(chip, plan.metrics, availability);
  } catch (const Error&) {
    // Some metrics collect alone but not beside others: name the user's metric
    // whose addition to the catalog's breaks the config.
    std::vector<std::string> tried(catalog_metrics.begin(), catalog_metrics.end());
    for (const ExtraMetric& m : plan.extra) {
      if (m.in_catalog) continue;
      tried.push_back(m.name);
      try {
        (void)build_config(chip, tried, availability);
      } catch (const Error&) {
        throw usage_error("metric '" + m.name + "' cannot be collected beside the catalog's " +
                          std::to_string(catalog_metrics.size()) +
                          " metrics (and the metrics before it in --metrics) on chip " + chip +
                          "; drop it or pick another (`timeroof metrics --chip " + chip +
                          " --filter TEXT`)");
      }
    }
    throw;
  }
  return plan;
}

std::map<Quantity, double> evaluate(const CollectionPlan& plan,
                                    const std::map<std::string, double>& values) {
  std::map<Quantity, double> out;
  for (const Quantity q : plan.quantities) {
    const auto expression = plan.expressions.find(q);
    if (expression == plan.expressions.end())
      throw usage_error(std::string("collection plan has no expression for ") + to_string(q));
    double sum = 0;
    for (const MetricTerm& t : expression->second) {
      const auto value = values.find(t.metric);
      if (value == values.end())
        throw usage_error("no value for metric '" + t.metric + "' (needed by " + to_string(q) +
                          ") on chip " + plan.chip);
      sum += t.weight * value->second;
    }
    out[q] = sum;
  }
  return out;
}

}  // namespace timeroof
