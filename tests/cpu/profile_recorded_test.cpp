// Profiles recorded on GPUs through the model, the Perfetto export and the
// report: what each recording must show, whatever its exact times.
// - tests/fixtures/profile-transformer-h100.json (H100, no counters): `timeroof
//   profile -- python3 examples/pytorch/profile_models.py --model transformer
//   --batch 4 --iterations 2 --warmup 1`, PyTorch 2.11, NVTX ranges per module from
//   forward hooks.
// - tests/fixtures/profile-resnet50-h200.json.gz (H200, with counters on the
//   roofs of the ceilings run exported with it): the same script with --model
//   resnet50 --batch 8, the default counter selection (scripts/device/
//   record-profile-fixture.sh). Its convolutions are checked against their
//   analytic FLOPs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/json_io.hpp"
#include "plots/perfetto_trace.hpp"
#include "plots/profile_report.hpp"
#include "roofline/profile_analysis.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

const RunRecord& recorded() {
  static const RunRecord record = [] {
    const std::string path = test::source_dir() + "/tests/fixtures/profile-transformer-h100.json";
    return parse_export_document(nlohmann::json::parse(test::read_file(path)), path).front();
  }();
  return record;
}

// The first node below `nodes`, depth first, whose `field` (its path or name) is `value`.
const roofline::RangeNode* find_node(
    const std::vector<roofline::RangeNode>& nodes, const std::string& value,
    std::string roofline::RangeNode::*field = &roofline::RangeNode::path) {
  for (const roofline::RangeNode& n : nodes) {
    if (n.*field == value) return &n;
    if (const roofline::RangeNode* below = find_node(n.children, value, field)) return below;
  }
  return nullptr;
}

TEST(RecordedProfile, PyTorchModulesAreTheRangeTreeAndTheirKernelsAreTheirs) {
  const RunRecord& record = recorded();
  ASSERT_EQ(record.trace.size(), 4181U);
  EXPECT_EQ(record.run.status, "complete");
  const roofline::ProfileAnalysis a = roofline::analyze_profile(record.trace);
  std::uint64_t kernels = 0;
  for (const roofline::KernelSummary& k : a.kernels) kernels += k.calls;
  EXPECT_EQ(kernels, 42U);
  // Every kernel was launched by an API call of the trace: none unattributed.
  EXPECT_EQ(a.unattributed.kernels, 0U);
  // The thread that ran the model holds the module tree under each iteration.
  const roofline::RangeNode* layer = nullptr;
  for (const roofline::ThreadRanges& t : a.threads)
    if (!layer) layer = find_node(t.roots, "transformer iteration/TransformerEncoderLayer");
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->calls, 2U);
  std::map<std::string, std::uint64_t> children;
  for (const roofline::RangeNode& c : layer->children) children[c.name] = c.calls;
  for (const char* module : {"self_attn", "norm1", "linear1", "linear2", "norm2"})
    EXPECT_EQ(children[module], 2U) << module;
  // A module's kernels are within its layer's: the tree adds up.
  std::uint64_t below = 0;
  for (const roofline::RangeNode& c : layer->children) below += c.work.kernels;
  EXPECT_LE(below, layer->work.kernels);
  EXPECT_GE(layer->work.kernels, 10U * 2);  // each iteration launched >= 10 kernels
  // The iterations: the program's own repeated range, split exactly.
  ASSERT_TRUE(a.iterations);
  EXPECT_EQ(a.iterations->range, "transformer iteration");
  ASSERT_EQ(a.iterations->iterations.size(), 2U);
  for (const roofline::Iteration& i : a.iterations->iterations)
    EXPECT_EQ(i.kernel_ns + i.copy_ns + i.idle_ns, i.wall_ns);
}

TEST(RecordedProfile, PerfettoTraceHasEveryRecordAndItsLaunchArrows) {
  const RunRecord& record = recorded();
  const nlohmann::json trace =
      plots::perfetto_trace(record.trace, plots::profile_provenance(record));
  std::map<std::string, std::size_t> phases;
  for (const nlohmann::json& e : trace["traceEvents"]) ++phases[e["ph"].get<std::string>()];
  EXPECT_EQ(phases["X"], record.trace.size());
  EXPECT_EQ(phases["s"], phases["f"]);
  EXPECT_GE(phases["s"], 42U);  // every kernel's launch, and the copies'
  EXPECT_EQ(trace["metadata"]["provenance"]["gpu"], "NVIDIA H100 80GB HBM3");
}

TEST(RecordedProfile, ReportShowsTheModulesAndTheIterations) {
  const RunRecord& record = recorded();
  const plots::ProfileReport report =
      plots::render_profile_report(record.trace, plots::profile_provenance(record));
  for (const char* text : {"self_attn", "linear1", "transformer iteration", "Top kernels"}) {
    EXPECT_NE(report.html.find(text), std::string::npos) << text;
    EXPECT_NE(report.markdown.find(text), std::string::npos) << text;
  }
}

// Recorded before counters existed: it analyses and prints as it did, with no
// model anywhere, even judged on roofs (nothing was measured to judge). Its one
// finding needs no counters: the host sets the iterations' pace.
TEST(RecordedProfile, WithoutCountersNoModelAndTheTablesAsBefore) {
  const RunRecord& record = recorded();
  roofline::ProfileOptions options;
  options.roofs = roofline::machine_roofs(test::profile_test_machine());
  const roofline::ProfileAnalysis a = roofline::analyze_profile(record.trace, options);
  EXPECT_EQ(a.counter_records, 0u);
  EXPECT_FALSE(a.program);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].label, "launch_bound");
  EXPECT_EQ(a.findings[0].text,
            "transformer iteration: launch-bound, the GPU idle 91% of an iteration (median 1.2 ms "
            "of 1.4 ms); 10 launches, 124 us of host-only time each (launch roof 2.0 us): fewer "
            "launches or less host work between them (CUDA graphs, fusion) would cut it");
  EXPECT_TRUE(a.launches.empty());
  for (const roofline::KernelSummary& k : a.kernels) EXPECT_FALSE(k.model) << k.name;
  std::function<void(const std::vector<roofline::RangeNode>&)> no_model =
      [&](const std::vector<roofline::RangeNode>& nodes) {
        for (const roofline::RangeNode& n : nodes) {
          EXPECT_FALSE(n.model) << n.path;
          no_model(n.children);
        }
      };
  for (const roofline::ThreadRanges& t : a.threads) no_model(t.roots);
  const std::vector<plots::ProfileTable> tables = plots::profile_tables(a, "  ");
  ASSERT_FALSE(tables.empty());
  EXPECT_EQ(tables.front().header,
            (std::vector<std::string>{"Kernel", "Calls", "Total", "Share of GPU busy", "Median",
                                      "Min", "Max"}));
  const auto findings =
      std::find_if(tables.begin(), tables.end(),
                   [](const plots::ProfileTable& t) { return t.id == "findings"; });
  ASSERT_NE(findings, tables.end());  // the launch-bound iterations, without counters too
  EXPECT_EQ(findings->rows, (std::vector<std::vector<std::string>>{{a.findings[0].text}}));
  EXPECT_EQ(plots::profile_summary(a).find("Counters"), std::string::npos);
  EXPECT_TRUE(plots::kernel_rates(a).empty());
}

// ResNet-50 with counters -------------------------------------------------

// Run 1: `timeroof ceilings --quick`; run 2: the profile, judged on run 1's roofs
// as `timeroof analyze` judges it.
const RunRecord& resnet50() {
  static const RunRecord record = [] {
    std::vector<RunRecord> runs = test::load_runs("tests/fixtures/profile-resnet50-h200.json.gz");
    EXPECT_EQ(runs.size(), 2U);
    RunRecord profile = runs.at(1);
    roofline::attach_profile_roofs(profile, {runs.at(0).run});
    return profile;
  }();
  return record;
}

const roofline::ProfileAnalysis& resnet50_analysis() {
  static const roofline::ProfileAnalysis a =
      roofline::analyze_profile(resnet50().trace, roofline::profile_options(resnet50()));
  return a;
}

const roofline::RangeNode& top_range(const std::string& name) {
  for (const roofline::ThreadRanges& t : resnet50_analysis().threads)
    for (const roofline::RangeNode& root : t.roots)
      if (root.name == name) return root;
  throw std::runtime_error("no top-level range " + name);
}

// torchvision's ResNet-50 (resnet.py: Bottleneck, the stride on the 3x3 conv,
// layers [3, 4, 6, 3], widths 64-512, expansion 4), each convolution's module
// name and its dense FLOPs for one image: 2 C K R S P Q (the fc as a 1x1 conv).
std::vector<std::pair<std::string, double>> resnet50_convolution_flops() {
  std::vector<std::pair<std::string, double>> out;
  auto conv = [&](std::string name, double in, double out_channels, double filter, double size) {
    out.emplace_back(std::move(name), 2 * in * out_channels * filter * filter * size * size);
  };
  conv("conv1", 3, 64, 7, 112);
  double in = 64, size = 56;
  const std::pair<int, double> stages[] = {{3, 64}, {4, 128}, {6, 256}, {3, 512}};
  for (int s = 0; s < 4; ++s) {
    const auto [blocks, width] = stages[s];
    for (int b = 0; b < blocks; ++b) {
      const std::string block = "layer" + std::to_string(s + 1) + "." + std::to_string(b);
      const double out_size = (b == 0 && s > 0) ? size / 2 : size;
      conv(block + ".conv1", in, width, 1, size);
      conv(block + ".conv2", width, width, 3, out_size);
      conv(block + ".conv3", width, 4 * width, 1, out_size);
      if (b == 0) conv(block + ".downsample.0", in, 4 * width, 1, out_size);
      in = 4 * width;
      size = out_size;
    }
  }
  conv("fc", 2048, 1000, 1, 1);
  return out;
}

TEST(RecordedResNet, AnalyticTableIsTorchvisionsResNet50) {
  double flops = 0;
  for (const auto& [name, f] : resnet50_convolution_flops()) flops += f;
  EXPECT_EQ(resnet50_convolution_flops().size(), 54U);  // 53 convolutions and the fc
  EXPECT_NEAR(flops / 2 / 1e9, 4.089, 0.001);           // GMACs an image, as published
}

// Every convolution's Tensor-Core FLOPs against 2 N C K R S P Q: never fewer
// (the counters miss nothing), at most the tile padding more (conv1 pads its 3
// input channels: 1.74x). Measured directly in the warm-up (each launch of the
// first step, in its module's range) and extrapolated to the two iterations by
// (configuration, range): keyed by configuration alone, layer1.1.conv1 took
// layer1.0.conv1's counters, a quarter of its FLOPs.
TEST(RecordedResNet, EveryConvolutionCountsAtLeastItsAnalyticFlops) {
  constexpr double kBatch = 8;
  for (const char* top : {"resnet50 warm-up", "resnet50 iteration"}) {
    const roofline::RangeNode& root = top_range(top);
    const bool warm_up = root.calls == 1;
    double analytic_total = 0, counted_total = 0;
    for (const auto& [name, flops] : resnet50_convolution_flops()) {
      const roofline::RangeNode* node = find_node(root.children, name, &roofline::RangeNode::name);
      ASSERT_NE(node, nullptr) << top << " has no " << name;
      ASSERT_TRUE(node->model) << node->path;
      const roofline::KernelModel& m = *node->model;
      EXPECT_EQ(m.not_covered, 0U) << node->path;
      EXPECT_EQ(m.launches, node->work.kernels) << node->path;
      EXPECT_EQ(m.measured, warm_up ? m.launches : 0U) << node->path;
      const double counted = m.quantities.at("tensor_fp16_flops") / node->calls;
      const double analytic = kBatch * flops;
      const double ratio = counted / analytic;
      EXPECT_GE(ratio, 1.0 - 1e-12) << node->path << ": " << counted << " of " << analytic;
      EXPECT_LE(ratio, 1.75) << node->path;
      // Where the tiles fit the problem, exactly the analytic count.
      if (name.starts_with("layer1.")) EXPECT_NEAR(ratio, 1.0, 1e-12) << node->path;
      analytic_total += analytic;
      counted_total += counted;
    }
    EXPECT_GE(counted_total / analytic_total, 1.0) << top;
    EXPECT_LE(counted_total / analytic_total, 1.2) << top;  // 1.13 recorded
  }
}

// A measured launch's record spans its replay (60-70 ms here): neither GPU busy,
// nor a kernel's times, nor a range's kernel time may count that as GPU time.
TEST(RecordedResNet, ReplaysAreNotKernelTime) {
  const roofline::ProfileAnalysis& a = resnet50_analysis();
  EXPECT_GE(a.counter_records, 347U);       // every launch of the warm-up step
  EXPECT_GT(a.span_ns(), 10'000'000'000U);  // the replays took tens of seconds
  EXPECT_LT(a.gpu_busy_ns, 50'000'000U);    // 14 ms recorded, 9.6 of them copies
  for (const roofline::KernelSummary& k : a.kernels)
    EXPECT_LT(k.max_ns, 1'000'000U) << k.name;  // ResNet-50's kernels at batch 8: < 0.1 ms
  const roofline::RangeNode& warm_up = top_range("resnet50 warm-up");
  const roofline::RangeNode& iterations = top_range("resnet50 iteration");
  // The warm-up's kernels took what an iteration's took, though it was replayed.
  EXPECT_LT(warm_up.work.kernel_ns, iterations.work.kernel_ns);
  ASSERT_TRUE(a.iterations);
  for (const roofline::Iteration& i : a.iterations->iterations) {
    EXPECT_EQ(i.measured_launches, 0U);
    EXPECT_LT(i.kernel_ns, i.wall_ns);
  }
}

// At batch 8 the GPU idles most of each iteration: the host sets its pace, and the
// finding that says so ranks first (host-only time outweighs any kernel's class).
TEST(RecordedResNet, TheHostSetsTheIterationsPace) {
  const roofline::ProfileAnalysis& a = resnet50_analysis();
  ASSERT_TRUE(a.iterations);
  double host_only_s = 0;
  for (const roofline::Iteration& i : a.iterations->iterations) {
    EXPECT_EQ(i.launches, 347U);  // every kernel of the forward pass
    EXPECT_GT(i.idle_ns, i.wall_ns / 2);
    host_only_s += static_cast<double>(i.idle_ns - i.replay_ns) * 1e-9;
  }
  ASSERT_FALSE(a.findings.empty());
  const roofline::ProfileFinding& f = a.findings.front();
  EXPECT_EQ(f.subject, "resnet50 iteration");
  EXPECT_EQ(f.label, "launch_bound");
  EXPECT_NEAR(f.explained_s, host_only_s, 1e-12);
  EXPECT_NE(f.text.find("; 347 launches, "), std::string::npos) << f.text;
  EXPECT_GT(a.findings.size(), 1U);  // the layers' and kernels' classes follow
}

TEST(RecordedResNet, ReportDrawsTheLayersOnTheRooflinesAndNamesTheLibraries) {
  const plots::ProfileReport report =
      plots::render_profile_report(resnet50().trace, plots::profile_provenance(resnet50()),
                                   roofline::profile_options(resnet50()));
  for (const char* text :
       {"Hierarchical Roofline: ranges and kernels", "Time-based roofline: ranges and kernels",
        "resnet50 iteration/ResNet/layer3/layer3.0/layer3.0.conv2", "Findings",
        "CUDA libraries the program loaded", "NVIDIA H200"})
    EXPECT_NE(report.html.find(text), std::string::npos) << text;
  // PyTorch's own cuDNN (its pip wheel), not the system's that timeroof uses.
  EXPECT_NE(report.markdown.find(
                " | cudnn | 9.19.0 | /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/"
                "lib/libcudnn.so.9 |"),
            std::string::npos);
  // Findings name kernels as the tables do: PyTorch's names run past 2,000 characters.
  const std::vector<plots::ProfileTable> tables = plots::profile_tables(resnet50_analysis(), "  ");
  bool findings = false;
  for (const plots::ProfileTable& t : tables) {
    if (t.id != "findings") continue;
    findings = true;
    ASSERT_FALSE(t.rows.empty());
    for (const std::vector<std::string>& row : t.rows) EXPECT_LT(row.at(0).size(), 250U) << row[0];
  }
  EXPECT_TRUE(findings);
}

TEST(RecordedResNet, PerfettoTraceCarriesEachCoveredLaunchsRates) {
  const roofline::ProfileAnalysis& a = resnet50_analysis();
  const plots::KernelRateMap rates = plots::kernel_rates(a);
  EXPECT_EQ(a.launches.size(), 1308U);  // every kernel launch covered
  EXPECT_EQ(rates.size(), a.launches.size());
  const nlohmann::json trace =
      plots::perfetto_trace(resnet50().trace, plots::profile_provenance(resnet50()), rates);
  std::size_t counters = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) counters += e["ph"] == "C";
  EXPECT_GE(counters, 2 * rates.size());  // FLOP/s at least, at each start and end
  EXPECT_EQ(trace["metadata"]["provenance"]["gpu"], "NVIDIA H200");
  // The 348 replayed kernels are drawn for their time, not their replays' 60-70 ms.
  std::size_t replayed = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    // Counter and metadata events have no category: a const json's operator[] must not look it up.
    if (e.value("cat", std::string()) != "kernel" || !e.at("args").value("replayed", false))
      continue;
    ++replayed;
    EXPECT_LT(e.at("dur").get<double>(), 100.0) << e["name"];                           // us
    EXPECT_GT(e.at("args").at("replay_span_us").get<double>(), 10'000.0) << e["name"];  // 10 ms
  }
  EXPECT_EQ(replayed, a.counter_records);
}

}  // namespace
}  // namespace timeroof
