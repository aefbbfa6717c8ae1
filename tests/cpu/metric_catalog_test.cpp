// The metric catalog and pass planner, offline through the CUPTI host API (a chip
// name, no GPU): every metric of every formula exists on every chip of its family,
// the planner collects only what an operator needs, and the pass count of each
// typical operator set is pinned (a change means a CUPTI upgrade changed the cost
// of a sweep, or the catalog did).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "counters/metric_catalog.hpp"
#include "counters/metric_host.hpp"
#include "counters/theoretical_peaks.hpp"

namespace timeroof {
namespace {

using Q = Quantity;
OperatorNeeds needs(Precision precision, MathMode math = MathMode::tensor) {
  OperatorNeeds n;
  n.precision = precision;
  n.math = math;
  return n;
}

// The typical operator sets of the sweeps.
OperatorNeeds fp16_conv() {
  return needs(Precision::fp16);
}
OperatorNeeds fp32_conv() {
  return needs(Precision::fp32);
}
OperatorNeeds bf16_lstm() {
  return needs(Precision::bf16);
}
OperatorNeeds fp32_fma_only() {
  return needs(Precision::fp32, MathMode::fma_only);
}

bool contains(const std::vector<Q>& list, Q q) {
  return std::find(list.begin(), list.end(), q) != list.end();
}

bool mentions(const std::vector<std::string>& metrics, const std::string& text) {
  for (const std::string& m : metrics)
    if (m.find(text) != std::string::npos) return true;
  return false;
}

// Every chip each family claims, from the family list "GA10x (GA102, GA103, ...)".
std::vector<std::string> catalog_chips() {
  std::vector<std::string> chips;
  const std::regex name("[A-Z]{2}[0-9A-Z]+");
  for (const std::string& family : MetricCatalog::supported_families()) {
    const std::string list = family.substr(family.find('('));
    for (auto it = std::sregex_iterator(list.begin(), list.end(), name);
         it != std::sregex_iterator(); ++it)
      chips.push_back(it->str());
  }
  return chips;
}

// ---- Quantities ---------------------------------------------------------------

TEST(Quantities, TableIsCompleteAndNamesAreSnakeCase) {
  const std::vector<QuantityInfo>& all = all_quantities();
  ASSERT_EQ(all.size(), static_cast<std::size_t>(Q::dram_write_bytes) + 1);
  std::set<std::string> names;
  const std::regex snake("[a-z][a-z0-9]*(_[a-z0-9]+)*");
  const std::set<std::string> units = {"s", "Hz", "FLOP", "op", "B"};
  for (std::size_t i = 0; i < all.size(); ++i) {
    const QuantityInfo& q = all[i];
    EXPECT_EQ(static_cast<std::size_t>(q.quantity), i) << q.name;
    EXPECT_TRUE(std::regex_match(q.name, snake)) << q.name;
    EXPECT_TRUE(names.insert(q.name).second) << "duplicate name " << q.name;
    EXPECT_TRUE(units.count(q.unit)) << q.name << " " << q.unit;
    EXPECT_EQ(parse_quantity(q.name), q.quantity);
    EXPECT_STREQ(to_string(q.quantity), q.name);
    EXPECT_FALSE(std::string(q.description).empty()) << q.name;
    // FLOPs and ops carry a precision class; time, clocks and bytes do not.
    const bool work = std::string(q.unit) == "FLOP" || std::string(q.unit) == "op";
    EXPECT_EQ(q.precision.has_value(), work) << q.name;
    EXPECT_EQ(std::string(q.unit) == "op", q.precision == PrecisionClass::tensor_int8) << q.name;
    const bool tensor = q.precision && is_tensor(*q.precision);
    EXPECT_EQ(q.path != TensorPath::none, tensor) << q.name;
  }
  EXPECT_STREQ(to_string(Q::half_flops), "half_flops");
  EXPECT_STREQ(to_string(PrecisionClass::half), "half");
  EXPECT_STREQ(to_string(TensorPath::wgmma), "wgmma");
  EXPECT_TRUE(is_path_part(Q::tensor_bf16_wgmma_flops));
  EXPECT_FALSE(is_path_part(Q::tensor_bf16_flops));
  EXPECT_FALSE(is_path_part(Q::tensor_bf16_sparse_flops));
}

TEST(Quantities, UnknownNameIsAUsageErrorListingTheKnownOnes) {
  try {
    parse_quantity("fp32_flop");
    FAIL() << "no error for an unknown quantity";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("'fp32_flop'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fp32_flops"), std::string::npos) << e.what();
  }
}

// Each FLOP and byte quantity names the roof it is divided by, and that roof's
// theoretical peak is one theoretical_peaks knows (one table of peaks, not two).
TEST(Quantities, RoofsAreTheoreticalPeaksCeilings) {
  for (const QuantityInfo& q : all_quantities()) {
    const std::string roof = q.roof;
    const bool divided = q.precision || std::string(q.unit) == "B";
    if (q.sparse || !divided) {
      EXPECT_TRUE(roof.empty()) << q.name;
      continue;
    }
    ASSERT_FALSE(roof.empty()) << q.name;
    EXPECT_TRUE(peak_formula(roof)) << q.name << " -> " << roof;
  }
  EXPECT_EQ(info(Q::tensor_fp16_mma_sync_flops).roof, "tensor_fp16_mma_sync");
  EXPECT_EQ(info(Q::dram_read_bytes).roof, "hbm_read");
}

// ---- Families -----------------------------------------------------------------

TEST(MetricCatalog, FamilyFromChipName) {
  const std::map<std::string, std::string> expected = {
      {"GA100", "GA100"}, {"GA102", "GA10x"}, {"GA107", "GA10x"}, {"GA10B", "GA10x"},
      {"AD102", "AD10x"}, {"AD107", "AD10x"}, {"GH100", "GH100"}, {"GB100", "GB100"},
      {"GB102", "GB100"}, {"GB10B", "GB10B"}, {"GB110", "GB110"}, {"GB202", "GB20x"},
      {"GB20B", "GB20x"}};
  for (const auto& [chip, family] : expected) {
    const MetricCatalog catalog = MetricCatalog::for_chip(chip);
    EXPECT_EQ(catalog.family(), family) << chip;
    EXPECT_EQ(catalog.chip(), chip);
  }
  // Ada has fp8 Tensor Cores, Ampere does not; only Hopper has wgmma, only
  // Blackwell datacenter parts tcgen05.
  EXPECT_FALSE(MetricCatalog::for_chip("GA102").has(Q::tensor_fp8_flops));
  EXPECT_FALSE(MetricCatalog::for_chip("GA100").has(Q::tensor_fp8_flops));
  EXPECT_TRUE(MetricCatalog::for_chip("AD102").has(Q::tensor_fp8_flops));
  EXPECT_TRUE(MetricCatalog::for_chip("GH100").has(Q::tensor_fp16_wgmma_flops));
  EXPECT_FALSE(MetricCatalog::for_chip("GH100").has(Q::tensor_fp16_tcgen05_flops));
  EXPECT_FALSE(MetricCatalog::for_chip("GA100").has(Q::tensor_fp16_mma_sync_flops));
  EXPECT_TRUE(MetricCatalog::for_chip("GB100").has(Q::tensor_fp16_tcgen05_flops));
  EXPECT_TRUE(MetricCatalog::for_chip("GB100").has(Q::tensor_int8_tcgen05_ops));
  EXPECT_FALSE(MetricCatalog::for_chip("GB110").has(Q::tensor_int8_tcgen05_ops));
  EXPECT_FALSE(MetricCatalog::for_chip("GB202").has(Q::tensor_fp16_tcgen05_flops));
  // Integrated parts list no dram__ metric.
  EXPECT_FALSE(MetricCatalog::for_chip("GA10B").has(Q::dram_read_bytes));
  EXPECT_TRUE(MetricCatalog::for_chip("GA102").has(Q::dram_read_bytes));
}

TEST(MetricCatalog, UnknownChipNamesTheSupportedFamilies) {
  for (const char* chip : {"GX999", "TU102", "gh100"}) {
    try {
      MetricCatalog::for_chip(chip);
      FAIL() << "no error for chip " << chip;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(e.code(), ExitCode::usage);
      EXPECT_NE(message.find(std::string("'") + chip + "'"), std::string::npos) << message;
      for (const char* family : {"GA100", "GA10x", "AD10x", "GH100", "GB100", "GB20x"})
        EXPECT_NE(message.find(family), std::string::npos) << family << ": " << message;
    }
  }
  EXPECT_THROW(plan_collection("GX999", {Q::duration}), Error);
  EXPECT_THROW(MetricCatalog::for_chip("GA100").expression(Q::tensor_fp8_flops), Error);
}

// Every chip a family claims is a CUPTI chip, and every metric of every formula
// exists there and fits in one config image.
TEST(MetricCatalog, EveryMetricExistsOnEveryChipOfItsFamily) {
  const std::vector<std::string> cupti_chips = MetricHost::supported_chips();
  const std::vector<std::string> chips = catalog_chips();
  ASSERT_GE(chips.size(), 20u);
  for (const char* needed : {"GA100", "GA102", "AD102", "GH100", "GB100", "GB202"})
    EXPECT_NE(std::find(chips.begin(), chips.end(), needed), chips.end()) << needed;
  for (const std::string& chip : chips) {
    ASSERT_NE(std::find(cupti_chips.begin(), cupti_chips.end(), chip), cupti_chips.end()) << chip;
    const MetricCatalog catalog = MetricCatalog::for_chip(chip);
    const MetricHost host(chip);
    for (const std::string& metric : catalog.metrics())
      EXPECT_TRUE(host.has_metric(metric)) << chip << ": " << metric;
    // Every chip counts time, the SM clock, CUDA-core FLOPs, L1/L2 and each
    // Tensor-Core type of its generation.
    for (const Q q : {Q::duration, Q::sm_clock, Q::fp64_flops, Q::fp32_flops, Q::half_flops,
                      Q::tensor_fp16_flops, Q::tensor_bf16_flops, Q::tensor_tf32_flops,
                      Q::tensor_int8_ops, Q::tensor_fp64_flops, Q::l1_bytes, Q::l2_bytes})
      EXPECT_TRUE(catalog.has(q)) << chip << ": " << to_string(q);
    EXPECT_GE(build_config(chip, catalog.metrics()).passes, 2u) << chip;
  }
}

// A type's all-path total is exactly the sum of its path parts, so the split is free.
TEST(MetricCatalog, PathPartsSumToTheirTotal) {
  const std::vector<std::pair<Q, std::vector<Q>>> types = {
      {Q::tensor_fp16_flops,
       {Q::tensor_fp16_mma_sync_flops, Q::tensor_fp16_wgmma_flops, Q::tensor_fp16_tcgen05_flops}},
      {Q::tensor_bf16_flops,
       {Q::tensor_bf16_mma_sync_flops, Q::tensor_bf16_wgmma_flops, Q::tensor_bf16_tcgen05_flops}},
      {Q::tensor_tf32_flops,
       {Q::tensor_tf32_mma_sync_flops, Q::tensor_tf32_wgmma_flops, Q::tensor_tf32_tcgen05_flops}},
      {Q::tensor_fp8_flops, {Q::tensor_fp8_tcgen05_flops}},
      {Q::tensor_int8_ops,
       {Q::tensor_int8_mma_sync_ops, Q::tensor_int8_wgmma_ops, Q::tensor_int8_tcgen05_ops}},
  };
  for (const char* chip : {"GH100", "GB100", "GB110"}) {
    const MetricCatalog catalog = MetricCatalog::for_chip(chip);
    for (const auto& [total, parts] : types) {
      if (!catalog.has(total)) continue;
      std::multiset<std::string> from_parts;
      int present = 0;
      for (const Q part : parts) {
        if (!catalog.has(part)) continue;
        ++present;
        for (const MetricTerm& t : catalog.expression(part)) {
          EXPECT_EQ(t.weight, 1.0);
          from_parts.insert(t.metric);
        }
      }
      if (present == 0) continue;  // e.g. fp8 on Hopper: one metric, no split
      std::multiset<std::string> from_total;
      for (const MetricTerm& t : catalog.expression(total)) from_total.insert(t.metric);
      EXPECT_EQ(from_parts, from_total) << chip << " " << to_string(total);
    }
  }
  // Hopper splits fp16 into mma.sync and wgmma; Blackwell datacenter into mma.sync and tcgen05.
  EXPECT_EQ(MetricCatalog::for_chip("GH100").expression(Q::tensor_fp16_wgmma_flops).front().metric,
            "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum");
  EXPECT_EQ(
      MetricCatalog::for_chip("GB100").expression(Q::tensor_bf16_tcgen05_flops).front().metric,
      "sm__ops_path_tensor_op_utchmma_src_bf16_dst_fp32_sparsity_off.sum");
}

// The FLOP weights (settled on an H200): FFMA 2, FADD/FMUL 1, packed HFMA2 4,
// HADD2/HMUL2 2; duration from nanoseconds.
TEST(MetricCatalog, CudaCoreWeights) {
  const MetricCatalog catalog = MetricCatalog::for_chip("GH100");
  std::map<std::string, double> half;
  for (const MetricTerm& t : catalog.expression(Q::half_flops)) half[t.metric] = t.weight;
  EXPECT_EQ(half, (std::map<std::string, double>{
                      {"sm__sass_thread_inst_executed_op_hadd_pred_on.sum", 2},
                      {"sm__sass_thread_inst_executed_op_hfma_pred_on.sum", 4},
                      {"sm__sass_thread_inst_executed_op_hmul_pred_on.sum", 2}}));
  EXPECT_EQ(catalog.expression(Q::duration).front().weight, 1e-9);
  // Never the Volta-era 512 x pipe_tensor instruction rule.
  for (const std::string& chip : catalog_chips())
    EXPECT_FALSE(mentions(MetricCatalog::for_chip(chip).metrics(), "inst_executed_pipe_tensor"))
        << chip;
}

// ---- Planner ------------------------------------------------------------------

TEST(Planner, QuantitiesForTypicalOperators) {
  EXPECT_EQ(quantities_for(fp16_conv()),
            (std::vector<Q>{Q::duration, Q::sm_clock, Q::half_flops, Q::fp32_flops,
                            Q::tensor_fp16_flops, Q::tensor_fp16_mma_sync_flops,
                            Q::tensor_fp16_wgmma_flops, Q::tensor_fp16_tcgen05_flops, Q::l1_bytes,
                            Q::l2_bytes, Q::dram_read_bytes, Q::dram_write_bytes}));
  // fp32 with Tensor Cores runs as tf32.
  const std::vector<Q> fp32 = quantities_for(fp32_conv());
  EXPECT_TRUE(contains(fp32, Q::tensor_tf32_flops));
  EXPECT_FALSE(contains(fp32, Q::half_flops));
  EXPECT_EQ(quantities_for(fp32_fma_only()),
            (std::vector<Q>{Q::duration, Q::sm_clock, Q::fp32_flops, Q::l1_bytes, Q::l2_bytes,
                            Q::dram_read_bytes, Q::dram_write_bytes}));
  const std::vector<Q> bf16 = quantities_for(bf16_lstm());
  EXPECT_TRUE(contains(bf16, Q::tensor_bf16_flops));
  EXPECT_FALSE(contains(bf16, Q::tensor_fp16_flops));

  OperatorNeeds lean = fp16_conv();
  lean.l1 = false;
  lean.dram = false;
  lean.tensor_paths = false;
  lean.dram_clock = true;
  lean.sparse = true;
  EXPECT_EQ(quantities_for(lean),
            (std::vector<Q>{Q::duration, Q::sm_clock, Q::dram_clock, Q::half_flops, Q::fp32_flops,
                            Q::tensor_fp16_flops, Q::tensor_fp16_sparse_flops, Q::l2_bytes}));
  const std::vector<Q> fp64 = quantities_for(needs(Precision::fp64));
  EXPECT_TRUE(contains(fp64, Q::fp64_flops));
  EXPECT_TRUE(contains(fp64, Q::tensor_fp64_flops));
  EXPECT_FALSE(contains(fp64, Q::fp32_flops));
  EXPECT_TRUE(contains(quantities_for(needs(Precision::int8)), Q::tensor_int8_ops));
  EXPECT_TRUE(contains(quantities_for(needs(Precision::fp8)), Q::tensor_fp8_flops));
}

// An fp16 plan holds fp16 Tensor-Core metrics only, dense ones, and nothing of
// another tensor type; an FMA-only plan no Tensor-Core metric at all.
TEST(Planner, CollectsOnlyWhatTheOperatorNeeds) {
  for (const char* chip : {"GA100", "GA102", "AD102", "GH100", "GB100", "GB202"}) {
    const CollectionPlan plan = plan_collection(chip, quantities_for(fp16_conv()));
    for (const std::string& m : plan.metrics) {
      if (m.find("sm__ops_path_tensor") == std::string::npos) continue;
      EXPECT_NE(m.find("fp16"), std::string::npos) << chip << ": " << m;
      for (const char* other : {"tf32", "bf16", "int8", "fp8", "fp64", "sparsity_on"})
        EXPECT_EQ(m.find(other), std::string::npos) << chip << ": " << m;
    }
    EXPECT_FALSE(mentions(plan.metrics, "dfma")) << chip;
    EXPECT_TRUE(mentions(plan.metrics, "hfma")) << chip;
    EXPECT_EQ(plan.unavailable.size() + plan.quantities.size(), quantities_for(fp16_conv()).size());

    const CollectionPlan fma = plan_collection(chip, quantities_for(fp32_fma_only()));
    EXPECT_FALSE(mentions(fma.metrics, "sm__ops_path_tensor")) << chip;
    EXPECT_FALSE(mentions(fma.metrics, "hfma")) << chip;
    EXPECT_TRUE(fma.unavailable.empty()) << chip;
  }
  const CollectionPlan hopper = plan_collection("GH100", quantities_for(fp16_conv()));
  EXPECT_EQ(hopper.family, "GH100");
  EXPECT_EQ(hopper.unavailable, std::vector<Q>{Q::tensor_fp16_tcgen05_flops});
  EXPECT_EQ(hopper.metrics.size(), 15u);
  EXPECT_TRUE(mentions(hopper.metrics, "hgmma_src_fp16_sparsity_off"));
  EXPECT_TRUE(mentions(hopper.metrics, "hmma_src_fp16_dst_fp32_sparsity_off"));
  // Ampere has one path: the split is unavailable, the total is not.
  const CollectionPlan ampere = plan_collection("GA100", quantities_for(fp16_conv()));
  EXPECT_TRUE(contains(ampere.quantities, Q::tensor_fp16_flops));
  EXPECT_TRUE(contains(ampere.unavailable, Q::tensor_fp16_mma_sync_flops));
  EXPECT_TRUE(contains(plan_collection("GA102", quantities_for(needs(Precision::fp8))).unavailable,
                       Q::tensor_fp8_flops));
  // Repeats collapse, request order is kept.
  const CollectionPlan twice =
      plan_collection("GH100", {Q::l2_bytes, Q::duration, Q::l2_bytes, Q::tensor_fp8_flops});
  EXPECT_EQ(twice.quantities, (std::vector<Q>{Q::l2_bytes, Q::duration, Q::tensor_fp8_flops}));
  EXPECT_EQ(twice.metrics,
            (std::vector<std::string>{"gpu__time_duration.sum", "lts__t_sectors_srcunit_tex.sum",
                                      "sm__ops_path_tensor_src_fp8_sparsity_off.sum"}));
  EXPECT_EQ(twice.passes(), 1u);
  EXPECT_EQ(twice.config.metrics, twice.metrics);
  EXPECT_GT(twice.config.bytes.size(), 1000u);
}

struct PassCase {
  const char* chip;
  // passes / distinct metrics for: fp16 conv, fp32 conv, bf16 LSTM, fp32 FMA-only
  std::size_t passes[4];
  std::size_t metrics[4];
};

void PrintTo(const PassCase& c, std::ostream* out) {
  *out << c.chip;
}

class PlannerPasses : public ::testing::TestWithParam<PassCase> {};

// CUPTI 13.0 pass counts. GH100's fp16 Conv2D set needs 2 (the all-sparsity tensor
// metrics needed 3); on GB100 the L1 counter beside tcgen05 costs the third.
TEST_P(PlannerPasses, TypicalOperatorSetsArePinned) {
  const PassCase& c = GetParam();
  const OperatorNeeds sets[4] = {fp16_conv(), fp32_conv(), bf16_lstm(), fp32_fma_only()};
  const char* names[4] = {"fp16 conv", "fp32 conv", "bf16 LSTM", "fp32 FMA-only"};
  for (int i = 0; i < 4; ++i) {
    const CollectionPlan plan = plan_collection(c.chip, quantities_for(sets[i]));
    EXPECT_EQ(plan.passes(), c.passes[i]) << c.chip << " " << names[i];
    EXPECT_EQ(plan.metrics.size(), c.metrics[i]) << c.chip << " " << names[i];
    EXPECT_LE(plan.passes(), 3u) << c.chip << " " << names[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Chips, PlannerPasses,
                         ::testing::Values(PassCase{"GA100", {2, 2, 2, 2}, {14, 10, 13, 9}},
                                           PassCase{"GA102", {2, 2, 2, 2}, {14, 10, 13, 9}},
                                           PassCase{"AD102", {2, 2, 2, 2}, {14, 10, 13, 9}},
                                           PassCase{"GH100", {2, 2, 2, 2}, {15, 11, 14, 9}},
                                           PassCase{"GB100", {3, 3, 2, 2}, {19, 14, 17, 12}},
                                           PassCase{"GB202", {2, 2, 2, 2}, {14, 10, 13, 9}}),
                         [](const ::testing::TestParamInfo<PassCase>& info) {
                           return std::string(info.param.chip);
                         });

// ---- Evaluation ---------------------------------------------------------------

TEST(Evaluate, AppliesTheWeights) {
  const CollectionPlan plan = plan_collection("GH100", quantities_for(fp16_conv()));
  const std::string sass = "sm__sass_thread_inst_executed_op_";
  const std::string tc = "sm__ops_path_tensor_op_";
  const std::map<std::string, double> values = {
      {"gpu__time_duration.sum", 1500000},  // ns
      {"sm__cycles_elapsed.avg.per_second", 1.98e9},
      {sass + "ffma_pred_on.sum", 100},
      {sass + "fadd_pred_on.sum", 10},
      {sass + "fmul_pred_on.sum", 20},
      {sass + "hfma_pred_on.sum", 1000},
      {sass + "hadd_pred_on.sum", 7},
      {sass + "hmul_pred_on.sum", 3},
      {tc + "hmma_src_fp16_dst_fp16_sparsity_off.sum", 5},
      {tc + "hmma_src_fp16_dst_fp32_sparsity_off.sum", 11},
      {tc + "hgmma_src_fp16_sparsity_off.sum", 1000},
      {"l1tex__t_bytes.sum", 900},
      {"lts__t_sectors_srcunit_tex.sum", 500},
      {"dram__bytes_read.sum", 64},
      {"dram__bytes_write.sum", 32},
      {"not_in_the_plan.sum", 12345},
  };
  const std::map<Q, double> got = evaluate(plan, values);
  const std::map<Q, double> expected = {
      {Q::duration, 1.5e-3},
      {Q::sm_clock, 1.98e9},
      {Q::fp32_flops, 2 * 100 + 10 + 20},         // 230
      {Q::half_flops, 4 * 1000 + 2 * 7 + 2 * 3},  // 4020
      {Q::tensor_fp16_flops, 5 + 11 + 1000},
      {Q::tensor_fp16_mma_sync_flops, 16},
      {Q::tensor_fp16_wgmma_flops, 1000},
      {Q::l1_bytes, 900},
      {Q::l2_bytes, 32 * 500},
      {Q::dram_read_bytes, 64},
      {Q::dram_write_bytes, 32},
  };
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& [q, value] : expected) {
    ASSERT_TRUE(got.count(q)) << to_string(q);
    EXPECT_DOUBLE_EQ(got.at(q), value) << to_string(q);
  }
}

// Blackwell datacenter parts count packed FFMA2 / FADD2 / FMUL2 apart from FFMA.
TEST(Evaluate, PackedFp32OnBlackwell) {
  const CollectionPlan plan = plan_collection("GB100", {Q::fp32_flops});
  const std::string sass = "sm__sass_thread_inst_executed_op_";
  std::map<std::string, double> values;
  double weight = 1;
  for (const char* op : {"ffma", "fadd", "fmul", "ffma2", "fadd2", "fmul2"}) {
    values[sass + op + "_pred_on.sum"] = weight;
    weight *= 10;
  }
  // 2 x 1 + 10 + 100 + 4 x 1000 + 2 x 10000 + 2 x 100000
  EXPECT_DOUBLE_EQ(evaluate(plan, values).at(Q::fp32_flops), 224112.0);
  EXPECT_EQ(plan.metrics.size(), 6u);
  EXPECT_EQ(plan_collection("GB202", {Q::fp32_flops}).metrics.size(), 3u);
}

TEST(Evaluate, MissingMetricIsNamed) {
  const CollectionPlan plan = plan_collection("GA100", {Q::dram_read_bytes, Q::dram_write_bytes});
  try {
    evaluate(plan, {{"dram__bytes_read.sum", 1}});
    FAIL() << "no error for a missing metric";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(message.find("'dram__bytes_write.sum'"), std::string::npos) << message;
    EXPECT_NE(message.find("dram_write_bytes"), std::string::npos) << message;
  }
}

// ---- A user's extra metrics (--metrics, #20) -------------------------------------

std::string usage_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(ExtraMetrics, JoinThePlanInOrderWithHowTheirTotalsAreFormed) {
  const CollectionPlan catalog = plan_collection("GH100", quantities_for(fp16_conv()));
  EXPECT_TRUE(catalog.extra.empty());
  const std::vector<std::string> extra = {"sm__warps_active.avg.pct_of_peak_sustained_active",
                                          "sm__cycles_elapsed.avg", "dram__bytes_read.sum",
                                          "sm__cycles_elapsed.max", "sm__cycles_elapsed.avg"};
  const CollectionPlan plan = plan_collection("GH100", quantities_for(fp16_conv()), {}, extra);
  ASSERT_EQ(plan.extra.size(), 4u);  // the repeat is kept once
  EXPECT_EQ(plan.extra[0].name, extra[0]);
  EXPECT_EQ(plan.extra[0].total, MetricTotal::duration_weighted_mean);
  EXPECT_EQ(plan.extra[1].total, MetricTotal::sum);
  EXPECT_FALSE(plan.extra[1].in_catalog);
  EXPECT_EQ(plan.extra[2].total, MetricTotal::sum);
  EXPECT_TRUE(plan.extra[2].in_catalog);  // dram_read_bytes' own metric
  EXPECT_EQ(plan.extra[3].total, MetricTotal::max);
  for (const std::string& m : extra)
    EXPECT_TRUE(std::binary_search(plan.metrics.begin(), plan.metrics.end(), m)) << m;
  EXPECT_EQ(plan.metrics.size(), catalog.metrics.size() + 3);
  EXPECT_TRUE(std::is_sorted(plan.metrics.begin(), plan.metrics.end()));
  EXPECT_EQ(plan.config.metrics, plan.metrics);
  EXPECT_EQ(plan.quantities, catalog.quantities);
  EXPECT_GE(plan.passes(), catalog.passes());
  // A throughput metric needs passes of its own (CUPTI 13: 2 -> 10 on GH100).
  const CollectionPlan more = plan_collection("GH100", quantities_for(fp16_conv()), {},
                                              {"sm__throughput.avg.pct_of_peak_sustained_elapsed"});
  EXPECT_GT(more.passes(), catalog.passes());
  EXPECT_EQ(more.extra.at(0).total, MetricTotal::duration_weighted_mean);
}

TEST(ExtraMetrics, TotalsByTypeAndName) {
  EXPECT_EQ(metric_total("dram__bytes_read.sum", "counter"), MetricTotal::sum);
  EXPECT_EQ(metric_total("sm__cycles_elapsed.avg", "counter"), MetricTotal::sum);
  EXPECT_EQ(metric_total("sm__cycles_elapsed.max", "counter"), MetricTotal::max);
  EXPECT_EQ(metric_total("sm__cycles_elapsed.min", "counter"), MetricTotal::min);
  EXPECT_EQ(metric_total("dram__bytes_read.sum.per_second", "counter"),
            MetricTotal::duration_weighted_mean);
  EXPECT_EQ(metric_total("sm__warps_active.avg.pct_of_peak_sustained_active", "counter"),
            MetricTotal::duration_weighted_mean);
  EXPECT_EQ(metric_total("smsp__average_warp_latency_per_inst_issued.ratio", "ratio"),
            MetricTotal::duration_weighted_mean);
  EXPECT_EQ(metric_total("sm__throughput.avg", "throughput"), MetricTotal::duration_weighted_mean);
  EXPECT_STREQ(to_string(MetricTotal::duration_weighted_mean), "duration_weighted_mean");
}

TEST(ExtraMetrics, UnknownOrUncollectableNamesAreUsageErrorsNamingThem) {
  const std::string unknown = usage_text([] {
    (void)plan_collection("GH100", quantities_for(fp16_conv()), {}, {"sm__cycles_elapsd.avg"});
  });
  EXPECT_NE(unknown.find("'sm__cycles_elapsd.avg'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("timeroof metrics --chip GH100 --filter"), std::string::npos) << unknown;
  EXPECT_EQ(unknown_metrics("GH100", {"dram__bytes_read.sum", "sm__cycles_elapsd.avg"}),
            std::vector<std::string>{"sm__cycles_elapsd.avg"});
  // Listed by CUPTI, yet no range-profiler config takes it beside the catalog's.
  const std::string apart = usage_text([] {
    (void)plan_collection("GH100", quantities_for(fp16_conv()), {}, {"pcie__read_bytes.sum"});
  });
  EXPECT_NE(apart.find("'pcie__read_bytes.sum'"), std::string::npos) << apart;
}

}  // namespace
}  // namespace timeroof
