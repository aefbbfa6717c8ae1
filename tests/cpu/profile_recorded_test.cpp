// A profile recorded on an H100 (tests/fixtures/profile-transformer-h100.json:
// `timeroof profile -- python3 examples/pytorch/profile_models.py --model
// transformer --batch 4 --iterations 2 --warmup 1`, PyTorch 2.11, NVTX ranges per
// module from forward hooks) through the model, the Perfetto export and the
// report: what the recording must show, whatever its exact times.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
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

const roofline::RangeNode* find_node(const std::vector<roofline::RangeNode>& nodes,
                                     const std::string& path) {
  for (const roofline::RangeNode& n : nodes) {
    if (n.path == path) return &n;
    if (const roofline::RangeNode* below = find_node(n.children, path)) return below;
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
// model anywhere, even judged on roofs (nothing was measured to judge).
TEST(RecordedProfile, WithoutCountersNoModelAndTheTablesAsBefore) {
  const RunRecord& record = recorded();
  roofline::ProfileOptions options;
  options.roofs = roofline::machine_roofs(test::profile_test_machine());
  const roofline::ProfileAnalysis a = roofline::analyze_profile(record.trace, options);
  EXPECT_EQ(a.counter_records, 0u);
  EXPECT_FALSE(a.program);
  EXPECT_TRUE(a.findings.empty());
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
  for (const plots::ProfileTable& t : tables) EXPECT_NE(t.id, "findings");
  EXPECT_EQ(plots::profile_summary(a).find("Counters"), std::string::npos);
  EXPECT_TRUE(plots::kernel_rates(a).empty());
}

}  // namespace
}  // namespace timeroof
