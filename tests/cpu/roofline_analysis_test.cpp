// The analysis document (roofline/analysis): the model's whole view of a run as
// JSON, on a synthetic run worked by hand (per-kernel lower bound, L1 left out, a
// failed point) and on the real H200 sample.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/json_io.hpp"
#include "roofline/analysis.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof::roofline {
namespace {

using nlohmann::json;

using test::ceiling;

// P_fp32 = 50 TFLOP/s, B_dram = 4 TB/s, B_l2 = 10 TB/s, B_l1 = 30 TB/s, L = 2 us.
RunRecord synthetic_run() {
  RunRecord r;
  r.run.uuid = "00000000-0000-4000-8000-000000000001";
  r.run.machine.gpu.name = "Synthetic GPU";
  r.run.machine.ceilings = {ceiling("fp32_fma", CeilingKind::compute, 50e12),
                            ceiling("hbm_read", CeilingKind::bandwidth, 4e12),
                            ceiling("l2_read", CeilingKind::bandwidth, 10e12),
                            ceiling("l1_read", CeilingKind::bandwidth, 30e12),
                            ceiling("launch_async", CeilingKind::latency, 2e-6)};
  // batch 1: a GEMM (20 us of compute) then an epilogue (20 us of DRAM), each with
  // its counters: T_lb = 40 us per kernel against 21 us per operator.
  Point gemm;
  gemm.sweep = "s";
  gemm.seq = 0;
  gemm.op = "fused_op";
  gemm.precision = "fp32";
  gemm.params = {{"batch", 1}};
  gemm.timing.call = TimeStats{.median_s = 50e-6};
  gemm.timing.kernel_time_s = 45e-6;
  gemm.timing.launches = 2;
  gemm.counters = {{"fp32_flops", 1.001e9}, {"dram_read_bytes", 8.4e7}, {"dram_write_bytes", 0}};
  KernelRecord k1, k2;
  k1.name = "gemm";
  k1.duration_s = 24e-6;
  k1.metrics = {{"fp32_flops", 1e9}, {"dram_read_bytes", 4e6}};
  k2.name = "epilogue";
  k2.duration_s = 21e-6;
  k2.metrics = {{"fp32_flops", 1e6}, {"dram_read_bytes", 8e7}};
  gemm.kernels = {k1, k2};
  // batch 2: TMA-style traffic, L1 far below L2.
  Point tma = gemm;
  tma.seq = 1;
  tma.params = {{"batch", 2}};
  tma.kernels.clear();
  tma.counters = {{"fp32_flops", 1e9}, {"l1_bytes", 1e3}, {"l2_bytes", 4e8}};
  // batch 4: failed, nothing measured.
  Point failed;
  failed.sweep = "s";
  failed.seq = 2;
  failed.op = "fused_op";
  failed.precision = "fp32";
  failed.params = {{"batch", 4}};
  failed.status = PointStatus::failed;
  failed.reason = "output is not finite";
  r.points = {gemm, tma, failed};
  return r;
}

TEST(Analysis, DocumentCarriesBoundsClassesLowerBoundAndFindings) {
  const json doc = analysis_document({synthetic_run()});
  EXPECT_EQ(doc["format"], "timeroof-analysis");
  EXPECT_EQ(doc["schema_version"], kAnalysisSchemaVersion);
  EXPECT_EQ(doc["options"]["thresholds"]["roof_fraction"], 0.4);
  EXPECT_EQ(doc["options"]["bounds"]["l1_min_fraction"], 0.5);
  ASSERT_EQ(doc["runs"].size(), 1u);
  const json& run = doc["runs"][0];
  EXPECT_EQ(run["run"]["gpu"], "Synthetic GPU");
  EXPECT_EQ(run["roofs"]["compute"]["fp32"]["value"], 50e12);
  EXPECT_TRUE(run["roofs"]["compute"]["tensor_fp16"]["value"].is_null());
  ASSERT_EQ(run["points"].size(), 3u);

  const json& p0 = run["points"][0];
  EXPECT_EQ(p0["analysed"], true);
  EXPECT_EQ(p0["lower_bound"]["scope"], "per-kernel");
  EXPECT_NEAR(p0["lower_bound"]["t_s"].get<double>(), 40e-6, 1e-18);
  EXPECT_NEAR(p0["lower_bound"]["operator_s"].get<double>(), 21e-6, 1e-18);
  ASSERT_EQ(p0["lower_bound"]["kernels"].size(), 2u);
  EXPECT_EQ(p0["lower_bound"]["kernels"][0]["limiting"], "compute");
  EXPECT_EQ(p0["lower_bound"]["kernels"][1]["limiting"], "dram");
  EXPECT_NEAR(p0["headroom"].get<double>(), 1.25, 1e-12);
  EXPECT_NEAR(p0["t_roof_s"].get<double>(), 21e-6, 1e-18);
  EXPECT_EQ(p0["class"]["label"], "memory_bound(dram)");  // 21 / 45 = 47% of the roof
  EXPECT_EQ(p0["limiting_roof"], "dram");
  EXPECT_TRUE(p0["levels"]["l2"]["bytes"].is_null());  // not collected
  EXPECT_EQ(p0["levels"]["dram"]["used"], true);

  const json& p1 = run["points"][1];
  EXPECT_EQ(p1["lower_bound"]["scope"], "per-operator");
  EXPECT_EQ(p1["levels"]["l1"]["excluded"], true);
  EXPECT_EQ(p1["levels"]["l1"]["used"], false);
  EXPECT_EQ(p1["levels"]["l1"]["bytes"], 1e3);
  EXPECT_TRUE(p1["levels"]["l1"]["time_s"].is_null());
  EXPECT_NE(p1["levels"]["l1"]["excluded_reason"].get<std::string>().find("TMA"),
            std::string::npos);

  const json& p2 = run["points"][2];
  EXPECT_EQ(p2["analysed"], false);
  EXPECT_EQ(p2["status"], "failed");
  EXPECT_EQ(p2["reason"], "output is not finite");
  EXPECT_FALSE(p2.contains("class"));

  ASSERT_EQ(run["series"].size(), 1u);  // batch 1 and 2; the failed point is left out
  EXPECT_EQ(run["series"][0]["points"].size(), 2u);
  EXPECT_EQ(run["series"][0]["fit"]["time"]["n"], 2u);
  EXPECT_EQ(run["series"][0]["fit"]["time_source"], "T_call");
  EXPECT_TRUE(run["series"][0]["fit"]["time"]["c_low_s"].is_null());  // 2 points: no interval
  EXPECT_TRUE(run["series"][0]["fit"]["graph"].is_null());
  ASSERT_FALSE(run["findings"].empty());
  EXPECT_EQ(run["findings"][0]["rank"], 1u);
  EXPECT_TRUE(run["findings"][0]["share"].is_number());
  EXPECT_TRUE(run["findings"][0]["explained_s"].is_number());
  // An older-style point (T_call only): T is T_call, parts not separated.
  EXPECT_EQ(p0["time_source"], "T_call");
  EXPECT_EQ(p0["time_s"], 50e-6);
  EXPECT_EQ(p0["times"]["call"]["median_s"], 50e-6);
  EXPECT_TRUE(p0["times"]["call"]["ci_low_s"].is_null());
  EXPECT_TRUE(p0["times"]["stream"].is_null());
  EXPECT_EQ(p0["decomposition"]["separated"], false);
  EXPECT_NEAR(p0["decomposition"]["host_overhead_s"].get<double>(), 5e-6, 1e-18);
  EXPECT_EQ(p0["class"]["rule"], "near_roof");
  // Numbers only: the document survives a dump and parse (no NaN or infinity).
  EXPECT_EQ(json::parse(doc.dump()), doc);
}

TimeStats stats(double median_s, double half) {
  TimeStats t;
  t.median_s = t.min_s = t.max_s = median_s;
  t.ci_low_s = median_s - half;
  t.ci_high_s = median_s + half;
  t.samples = 40;
  t.converged = true;
  return t;
}

// Schema 3: the three times with their intervals, the issue time, the measured
// parts and the rule of the class, as numbers.
TEST(Analysis, DocumentCarriesTheThreeTimesThePartsAndTheRule) {
  RunRecord r = synthetic_run();
  Point& p = r.points[0];
  p.timing.call = stats(60e-6, 1e-6);
  p.timing.stream = stats(50e-6, 0.5e-6);
  p.timing.graph = stats(47e-6, 0.5e-6);
  p.timing.issue = stats(10e-6, 0.1e-6);
  r.points[1].timing.graph_unavailable = "capture failed";
  const json doc = analysis_document({r});
  EXPECT_EQ(doc["schema_version"], 3);
  EXPECT_EQ(doc["options"]["thresholds"]["issue_ratio"], 1.0);
  EXPECT_EQ(doc["options"]["fit"]["min_knee_r2"], 0.9);
  EXPECT_EQ(doc["options"]["findings"]["graph_min_gain"], 1.2);
  const json& j = doc["runs"][0]["points"][0];
  EXPECT_EQ(j["time_source"], "T_stream");
  EXPECT_EQ(j["time_s"], 50e-6);
  EXPECT_DOUBLE_EQ(j["times"]["stream"]["ci_low_s"].get<double>(), 49.5e-6);
  EXPECT_DOUBLE_EQ(j["times"]["graph"]["ci_high_s"].get<double>(), 47.5e-6);
  EXPECT_EQ(j["times"]["issue"]["median_s"], 10e-6);
  EXPECT_EQ(j["times"]["call"]["samples"], 40);
  EXPECT_EQ(j["times"]["call"]["converged"], true);
  const json& d = j["decomposition"];
  EXPECT_EQ(d["separated"], true);
  EXPECT_NEAR(d["host_overhead_s"].get<double>(), 3e-6, 1e-18);  // 50 - 47
  EXPECT_NEAR(d["device_gaps_s"].get<double>(), 2e-6, 1e-18);    // 47 - 45
  EXPECT_NEAR(d["kernel_s"].get<double>(), 45e-6, 1e-18);
  EXPECT_EQ(d["not_explained_s"], 0.0);
  EXPECT_NEAR(d["call_premium_s"].get<double>(), 10e-6, 1e-18);
  EXPECT_EQ(d["graph_vs_time"], "unknown");
  EXPECT_TRUE(d["notes"].empty());
  // The host issues in 10 us, the device runs the call in 47 us: not launch-bound.
  EXPECT_EQ(j["class"]["label"], "memory_bound(dram)");
  EXPECT_EQ(j["class"]["rule"], "near_roof");
  EXPECT_EQ(doc["runs"][0]["points"][1]["times"]["graph_unavailable"], "capture failed");
  EXPECT_EQ(json::parse(doc.dump()), doc);
}

// A pageable sweep: 1 GB copied in per call at batch 1, 2 GB at batch 2, on a
// machine with pinned 50 GB/s and pageable 10 GB/s H2D roofs (no D2H roofs).
TEST(Analysis, TransferRoofsAllFourListedAndEachPointSaysWhichItUsed) {
  RunRecord r = synthetic_run();
  r.run.machine.ceilings.push_back(ceiling("h2d_pinned", CeilingKind::bandwidth, 50e9));
  r.run.machine.ceilings.push_back(ceiling("h2d_pageable", CeilingKind::bandwidth, 10e9));
  r.points.resize(2);
  for (Point& p : r.points) {
    const double batch = p.params["batch"].get<double>();
    p.kernels.clear();
    p.timing.call = TimeStats{.median_s = 0.15 * batch};
    p.timing.h2d_bytes = 1e9 * batch;
    p.timing.h2d_time_s = 0.125 * batch;  // 8 GB/s: 80% of the pageable roof
    p.timing.d2h_bytes = 0;
    p.details["transfer"] = {{"mode", "h2d_input"}, {"host", "pageable"}};
  }
  const RunAnalysis a = analyze(r);
  const json run = analysis_json(r, a);
  const json& t = run["roofs"]["transfer"];
  EXPECT_EQ(t["h2d"]["pinned"]["value"], 50e9);
  EXPECT_EQ(t["h2d"]["pageable"]["value"], 10e9);
  EXPECT_EQ(t["h2d"]["pageable"]["ceiling"], "h2d_pageable");
  EXPECT_TRUE(t["d2h"]["pinned"]["value"].is_null());
  EXPECT_EQ(t["d2h"]["pageable"]["source"], "absent");
  EXPECT_FALSE(run["roofs"].contains("h2d"));  // schema 1's pinned-only key is gone

  const json& p0 = run["points"][0];
  EXPECT_NEAR(p0["t_xfer_s"].get<double>(), 0.1, 1e-15);  // 1 GB at 10 GB/s, not 50
  EXPECT_EQ(p0["transfer"]["host"], "pageable");
  EXPECT_EQ(p0["transfer"]["h2d"]["ceiling"], "h2d_pageable");
  EXPECT_EQ(p0["transfer"]["h2d"]["bandwidth"], 10e9);
  EXPECT_EQ(p0["transfer"]["d2h"]["bytes"], 0.0);
  EXPECT_TRUE(p0["transfer"]["d2h"]["bandwidth"].is_null());
  EXPECT_EQ(p0["class"]["label"], "transfer_bound");

  ASSERT_FALSE(a.findings.empty());
  const std::string& text = a.findings[0].text;
  EXPECT_NE(text.find("transfer-bound"), std::string::npos) << text;
  EXPECT_NE(text.find("on the pageable H2D roof 10.0 GB/s (copies at 80% of the roof)"),
            std::string::npos)
      << text;
}

TEST(Analysis, TheSampleIsAnalysedPointByPoint) {
  const std::vector<RunRecord> records = test::load_runs("samples/sample-run.json.gz");
  ASSERT_EQ(records.size(), 1u);
  const RunAnalysis a = analyze(records[0]);
  ASSERT_EQ(a.points.size(), records[0].points.size());
  const json doc = analysis_document(records);
  const json& run = doc["runs"][0];
  std::size_t analysed = 0, l1_left_out = 0;
  for (std::size_t i = 0; i < records[0].points.size(); ++i) {
    const Point& p = records[0].points[i];
    const json& j = run["points"][i];
    EXPECT_EQ(j["seq"], p.seq);
    EXPECT_EQ(j["analysed"], analysed_status(p.status));
    if (!analysed_status(p.status)) continue;
    ++analysed;
    EXPECT_FALSE(j["class"]["label"].get<std::string>().empty());
    EXPECT_EQ(j["lower_bound"]["scope"], "per-kernel");  // every kernel has its own counters
    EXPECT_GE(j["headroom"].get<double>(), 1.0);
    if (j["levels"]["l1"]["excluded"] == true) ++l1_left_out;
    // fp16 convolution on Hopper loads through TMA: L1 is left out at large batch.
    if (p.op == "conv2d_fwd" && p.precision == "fp16" && p.params.value("batch", 0) >= 256)
      EXPECT_EQ(j["levels"]["l1"]["excluded"], true) << p.seq;
  }
  EXPECT_GT(analysed, records[0].points.size() / 2);
  EXPECT_GT(l1_left_out, 0u);
  EXPECT_EQ(run["series"].size(), a.series.size());
  ASSERT_EQ(run["findings"].size(), a.findings.size());
  for (std::size_t i = 1; i < a.findings.size(); ++i) {
    EXPECT_EQ(run["findings"][i]["rank"], i + 1);
    EXPECT_GE(run["findings"][i - 1]["explained_s"].get<double>(),
              run["findings"][i]["explained_s"].get<double>());
  }
  // One analysis: the findings, fits and per-point numbers agree with the model's
  // functions run on their own.
  const std::vector<Finding> alone = findings(records[0].points, a.roofs);
  ASSERT_EQ(alone.size(), a.findings.size());
  for (std::size_t i = 0; i < alone.size(); ++i) EXPECT_EQ(alone[i].text, a.findings[i].text);
  for (const SeriesAnalysis& sa : a.series) {
    for (const SeriesPoint& sp : sa.series.points) {
      EXPECT_EQ(sp.bounds.time_s, a.points[sp.index].bounds.time_s);
      EXPECT_EQ(sp.classification.reason, a.points[sp.index].classification.reason);
    }
  }
  EXPECT_EQ(json::parse(doc.dump()), doc);
}

// Roofs above their peak or spread beyond the option are flagged, machine-level,
// once in analyze() and in the analysis document: the H100 sample's tensor_bf16
// measures 100.26% of its theoretical; six roofs of each sample spread > 10%.
TEST(Analysis, RoofsAbovePeakOrSpreadAreFlagged) {
  const RunRecord h100 = test::load_run("samples/sample-run-h100.json.gz");
  const RunAnalysis a = analyze(h100);
  std::vector<std::string> above, spread;
  for (const RoofFinding& f : a.roof_findings)
    (f.label == "roof_above_peak" ? above : spread).push_back(f.ceiling);
  EXPECT_EQ(above, std::vector<std::string>{"tensor_bf16"});
  ASSERT_FALSE(a.roof_findings.empty());
  const RoofFinding& bf16 = a.roof_findings.front();
  EXPECT_NEAR(bf16.value, 1.0026, 0.0001);
  EXPECT_EQ(bf16.text.rfind("tensor_bf16 measures 878 TFLOP/s, 100.3% of its theoretical", 0), 0u)
      << bf16.text;
  EXPECT_EQ(spread, (std::vector<std::string>{"launch_async", "launch_sync", "h2d_pinned",
                                              "h2d_pageable", "d2h_pageable", "cublaslt_tf32"}));
  // The H200's h2d_pageable: 60 repeats, 43% apart.
  const RunAnalysis h200 = analyze(test::load_run("samples/sample-run.json.gz"));
  const auto pageable =
      std::find_if(h200.roof_findings.begin(), h200.roof_findings.end(),
                   [](const RoofFinding& f) { return f.ceiling == "h2d_pageable"; });
  ASSERT_NE(pageable, h200.roof_findings.end());
  EXPECT_EQ(pageable->text.rfind("h2d_pageable: its 60 repeats spread 43.1% ((max - min) / "
                                 "median), above 10.0%",
                                 0),
            0u)
      << pageable->text;
  // The options move the lines: nothing passes 50% spread or 101% of peak.
  FindingsOptions loose;
  loose.roof_max_spread = 0.5;
  loose.roof_max_of_peak = 1.01;
  EXPECT_TRUE(analyze(h100, loose).roof_findings.empty());
  // The document carries them and the options.
  const json doc = analysis_document({h100});
  const json& found = doc.at("runs").at(0).at("roof_findings");
  ASSERT_EQ(found.size(), a.roof_findings.size());
  EXPECT_EQ(found.at(0).at("ceiling"), "tensor_bf16");
  EXPECT_EQ(found.at(0).at("label"), "roof_above_peak");
  EXPECT_EQ(found.at(0).at("limit"), 1.0);
  EXPECT_EQ(doc.at("options").at("findings").at("roof_max_spread"), 0.1);
  EXPECT_EQ(doc.at("options").at("findings").at("roof_max_of_peak"), 1.0);
}

}  // namespace
}  // namespace timeroof::roofline
