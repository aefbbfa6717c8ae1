// plots/: the SVG writer, ticks and legend placement, chart structure from fixed
// model input, escaping of templated kernel names, and every chart of the real
// H200 sample (samples/sample-run.json.gz) checked as XML and rendered to PNG.
//
// TIMEROOF_PLOTS_OUT=DIR keeps the sample's SVG and PNG files in DIR to look at.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "core/json_io.hpp"
#include "plots/axes.hpp"
#include "plots/charts.hpp"
#include "plots/process.hpp"
#include "plots/svg.hpp"
#include "roofline/analysis.hpp"
#include "roofline/bounds.hpp"
#include "roofline/classify.hpp"
#include "roofline/machine_roofs.hpp"
#include "roofline/sweep_fit.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/run_tool.hpp"
#include "tests/support/xml_check.hpp"

namespace timeroof::plots {
namespace {

using detail::find_on_path;
using test::check_xml;
using test::count_occurrences;
using test::write_file;
using test::XmlCheck;

// Runs `args` through /bin/sh (run_process needs a path; the tools are on PATH).
test::ToolResult sh(const std::string& command) {
  return test::run_process({"/bin/sh", "-c", command});
}

// The labels of log_ticks(), majors only.
std::vector<std::string> labels(const std::vector<Tick>& ticks) {
  std::vector<std::string> out;
  for (const Tick& t : ticks)
    if (!t.label.empty()) out.push_back(t.label);
  return out;
}

// ---- SVG writer ----------------------------------------------------------------

TEST(Svg, EscapesAllFiveSpecialCharacters) {
  EXPECT_EQ(escape("void f<a, b>(T&) && g's \"x\""),
            "void f&lt;a, b&gt;(T&amp;) &amp;&amp; g&apos;s &quot;x&quot;");
  EXPECT_EQ(escape("plain"), "plain");
}

// Issue 16: U+FFFE, U+FFFF, C0 controls and bytes that are not UTF-8 in a name
// made every SVG of its run ill-formed XML.
TEST(Svg, EscapeReplacesWhatXmlCannotHoldWithTheReplacementCharacter) {
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(escape("a\xef\xbf\xbe"
                   "b\xef\xbf\xbf"
                   "c"),
            "a" + fffd + "b" + fffd + "c");
  EXPECT_EQ(escape(std::string("x\x01y\x1b"
                               "z\0w",
                               7)),
            "x" + fffd + "y" + fffd + "z" + fffd + "w");
  EXPECT_EQ(escape("bad \xff\xc3 end"), "bad " + fffd + fffd + " end");
  EXPECT_EQ(escape("\xed\xa0\x80"), fffd + fffd + fffd) << "a lone surrogate, byte by byte";
  EXPECT_EQ(escape("\xc2\x85"), fffd) << "C1 control";
  EXPECT_EQ(escape("\xf0\x9f\xbf\xbe"), fffd) << "U+1FFFE";
  EXPECT_EQ(escape("tab\tnl\ncr\r"), "tab\tnl\ncr\r");
  EXPECT_EQ(escape("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
}

TEST(Svg, TextAndAttributesWithIllegalCodePointsStayWellFormed) {
  const std::string name = std::string("n\xef\xbf\xbe\xef\xbf\xbf\x01\xff<&>\"'", 14);
  Svg svg(100, 100);
  svg.begin_group(name, name);
  svg.text(1, 1, name, TextStyle{});
  svg.end_group();
  const std::string doc = svg.str();
  const XmlCheck x = check_xml(doc);
  ASSERT_TRUE(x.ok) << x.error;
  ASSERT_EQ(x.texts.size(), 1u);
  EXPECT_EQ(x.texts[0], "n\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd<&>\"'");
  if (find_on_path("xmllint").empty())
    GTEST_SKIP() << "own checker passed; xmllint not installed (libxml2-utils)";
  test::TempDir dir;
  write_file(dir.file("t.svg"), doc);
  const auto r = sh("xmllint --noout '" + dir.file("t.svg") + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(Svg, NumbersHaveBoundedPrecision) {
  EXPECT_EQ(num(1.0 / 3.0), "0.33");
  EXPECT_EQ(num(12.0), "12");
  EXPECT_EQ(num(12.5), "12.5");
  EXPECT_EQ(num(-0.001), "0");
  EXPECT_EQ(num(std::numeric_limits<double>::infinity()), "0");
}

TEST(Svg, DocumentHasViewBoxShapesAndTooltips) {
  Svg svg(400, 300);
  svg.begin_group("tip <1> & 'two'", "g1");
  svg.line(0, 0, 10, 10, Style{"#000", "none", 1, "4 2", 1});
  svg.polyline({{0, 0}, {5, 5}, {10, 0}}, Style{"#f00", "none", 2, "", 1});
  for (Marker m : {Marker::circle, Marker::square, Marker::diamond, Marker::triangle_up,
                   Marker::triangle_down, Marker::cross, Marker::plus})
    svg.marker(m, 50, 50, 8, Style{"#000", "#0f0", 1, "", 1});
  TextStyle ts;
  ts.anchor = Anchor::middle;
  svg.text(20, 20, "a<b", ts);
  svg.end_group();
  const std::string doc = svg.str();
  EXPECT_NE(doc.find("viewBox=\"0 0 400 300\""), std::string::npos);
  EXPECT_NE(doc.find("stroke-dasharray=\"4 2\""), std::string::npos);
  EXPECT_NE(doc.find("text-anchor=\"middle\""), std::string::npos);
  EXPECT_EQ(count_occurrences(doc, "<polygon"), 3u);  // diamond and two triangles
  const XmlCheck x = check_xml(doc);
  ASSERT_TRUE(x.ok) << x.error;
  ASSERT_EQ(x.titles.size(), 1u);
  EXPECT_EQ(x.titles[0], "tip <1> & 'two'");
  ASSERT_EQ(x.texts.size(), 1u);
  EXPECT_EQ(x.texts[0], "a<b");
}

TEST(XmlChecker, RejectsBrokenDocuments) {
  EXPECT_FALSE(check_xml("<a><b></a></b>").ok);
  EXPECT_FALSE(check_xml("<a>x & y</a>").ok);
  EXPECT_FALSE(check_xml("<a x=1/>").ok);
  EXPECT_FALSE(check_xml("<a x=\"1\" x=\"2\"/>").ok);
  EXPECT_FALSE(check_xml("<a/><b/>").ok);
  EXPECT_TRUE(check_xml("<?xml version=\"1.0\"?><a x='1'>&lt;&#38;</a>").ok);
}

// ---- Ticks and legend ------------------------------------------------------------

TEST(Ticks, SiLabels) {
  EXPECT_EQ(si_label(1e12), "1 T");
  EXPECT_EQ(si_label(100e9), "100 G");
  EXPECT_EQ(si_label(1e-6, "s"), "1 us");
  EXPECT_EQ(si_label(2.5e-6, "s"), "2.5 us");
  EXPECT_EQ(si_label(835.09e12, "FLOP/s"), "835 TFLOP/s");
  EXPECT_EQ(si_label(0.5), "500 m");
  EXPECT_EQ(si_label(16), "16");
  EXPECT_EQ(si_label(999.9e9), "1 T");
}

TEST(Ticks, DecadesFromGigaToPeta) {
  const auto t = log_ticks(1e9, 1e15);
  EXPECT_EQ(labels(t),
            (std::vector<std::string>{"1 G", "10 G", "100 G", "1 T", "10 T", "100 T", "1 P"}));
  EXPECT_EQ(t.size(), 7u + 6u * 8u);  // minor 2..9 in each of 6 decades
}

TEST(Ticks, NarrowRangeGetsOneTwoFiveAndWideRangeThinsOut) {
  EXPECT_EQ(
      labels(log_ticks(1e-6, 1e-4, "s")),
      (std::vector<std::string>{"1 us", "2 us", "5 us", "10 us", "20 us", "50 us", "100 us"}));
  const auto wide = labels(log_ticks(1e-3, 1e15));  // 18 decades: every 3rd labelled
  EXPECT_LE(wide.size(), 8u);
  EXPECT_EQ(wide.front(), "1 m");
  EXPECT_EQ(labels(pow2_ticks(1, 512)),
            (std::vector<std::string>{"1", "2", "4", "8", "16", "32", "64", "128", "256", "512"}));
  EXPECT_EQ(labels(pow2_ticks(1024, 2048)), (std::vector<std::string>{"1024", "2048"}));
  EXPECT_EQ(labels(linear_ticks(0, 1)),
            (std::vector<std::string>{"0", "200 m", "400 m", "600 m", "800 m", "1"}));
  EXPECT_EQ(decade_range(3e9, 2e14), (std::array<double, 2>{1e9, 1e15}));
}

TEST(Legend, GoesToTheEmptiestCorner) {
  const Area area{100, 50, 600, 400};
  std::vector<XY> occupied;
  // Data along the top and in the bottom-left corner: bottom-right is empty.
  for (double x = 100; x <= 700; x += 5) occupied.push_back({x, 60});
  for (double x = 100; x <= 250; x += 5) occupied.push_back({x, 430});
  EXPECT_EQ(emptiest_corner(area, occupied, {150, 80}), Corner::bottom_right);
  // Nothing in any box: the quadrant with the fewest points wins.
  std::vector<XY> centre = {{390, 240}, {380, 230}, {420, 260}};
  EXPECT_EQ(emptiest_corner(area, centre, {100, 50}), Corner::top_right);
  Svg svg(800, 500);
  draw_legend(svg, area, Corner::bottom_right,
              {{"HBM", color(Bound::hbm), true, "", false, Marker::circle, true}});
  EXPECT_NE(svg.str().find("legend bottom_right"), std::string::npos);
}

TEST(Palette, OneDistinctColourPerBound) {
  std::set<std::string> colours;
  for (Bound b : {Bound::compute_cuda, Bound::compute_tensor, Bound::hbm, Bound::l2, Bound::l1,
                  Bound::launch, Bound::transfer, Bound::interconnect, Bound::measured})
    colours.insert(color(b));
  EXPECT_EQ(colours.size(), kBoundCount);
}

// ---- Charts from fixed model input -------------------------------------------------

Ceiling ceiling(const std::string& name, CeilingKind kind, const std::string& unit, double measured,
                std::optional<double> theoretical = std::nullopt) {
  Ceiling c;
  c.name = name;
  c.kind = kind;
  c.unit = unit;
  c.measured = measured;
  c.theoretical = theoretical;
  return c;
}

Machine synthetic_machine() {
  const auto C = CeilingKind::compute;
  const auto B = CeilingKind::bandwidth;
  Machine m;
  m.gpu.name = "Test GPU";
  m.gpu.l2_bytes = 50LL << 20;
  m.ceilings = {
      ceiling("fp32_fma", C, "FLOP/s", 50e12, 60e12),
      ceiling("tensor_fp16", C, "FLOP/s", 800e12, 1000e12),
      ceiling("hbm_read", B, "B/s", 4e12, 5e12),
      ceiling("l2_read", B, "B/s", 10e12),
      ceiling("l1_read", B, "B/s", 30e12),
      ceiling("launch_async", CeilingKind::latency, "s", 2e-6),
  };
  for (double b = 16e3; b < 5e9; b *= 4)
    m.working_set.push_back({b, b < 200e3 ? 29e12 : b < 50e6 ? 9e12 : 4e12});
  return m;
}

TEST(ClassicRoofline, TheNodesInterconnectIsTheThirdRoofOfARunOfSeveralGpus) {
  Machine machine = synthetic_machine();
  const auto B = CeilingKind::bandwidth;
  machine.ceilings.push_back(ceiling("p2p_ce_0to1", B, "B/s", 380e9));
  machine.ceilings.push_back(ceiling("p2p_sm_0to1", B, "B/s", 420e9));
  machine.ceilings.push_back(ceiling("p2p_latency_0to1", CeilingKind::latency, "s", 1.5e-6));
  machine.ceilings.push_back(ceiling("allreduce_nccl", B, "B/s", 350e9));
  const auto roofs = roofline::machine_roofs(machine);
  ASSERT_TRUE(roofs.interconnect.available());
  EXPECT_EQ(roofs.interconnect.ceiling, "p2p_sm_0to1");  // the best GPU-to-GPU bandwidth
  const std::string svg = classic_roofline_chart(roofs, {});
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_TRUE(x.has_text("interconnect 420 GB/s"));
  EXPECT_EQ(count_occurrences(svg, "class=\"bandwidth-roof\""),
            4u);  // L1, L2, HBM and the interconnect
  // A one-GPU run has none.
  EXPECT_FALSE(roofline::machine_roofs(synthetic_machine()).interconnect.available());
  const std::string one = classic_roofline_chart(roofline::machine_roofs(synthetic_machine()), {});
  EXPECT_EQ(count_occurrences(one, "class=\"bandwidth-roof\""), 3u);
  // The ceilings chart lists them with their palette colour.
  const std::string table = ceilings_chart(machine);
  EXPECT_NE(table.find("p2p_latency_0to1"), std::string::npos);
  EXPECT_NE(table.find(color(Bound::interconnect)), std::string::npos);
}

PointSample sample_at(const std::string& label, const std::string& cls, double ai_dram,
                      double achieved) {
  PointSample s;
  s.label = label;
  s.params = "batch=16";
  s.precision_class = cls;
  s.intensity[static_cast<std::size_t>(Level::dram)] = ai_dram;
  s.intensity[static_cast<std::size_t>(Level::l2)] = ai_dram / 3;
  s.intensity[static_cast<std::size_t>(Level::l1)] = ai_dram / 9;
  s.achieved = achieved;
  s.time_s = 1e-4;
  s.bound = "memory_bound(dram)";
  s.efficiency = 0.8;
  return s;
}

TEST(ClassicRoofline, RoofsLabelledWithValuesAxesAndOneGroupPerSample) {
  const auto roofs = roofline::machine_roofs(synthetic_machine());
  const std::vector<PointSample> samples = {sample_at("conv fp32", "fp32", 2, 5e12),
                                            sample_at("conv fp16", "tensor_fp16", 50, 150e12),
                                            sample_at("gemm fp16", "tensor_fp16", 500, 600e12)};
  const std::string svg = classic_roofline_chart(roofs, samples);
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_TRUE(x.has_text("fp32 50.0 TFLOP/s"));
  EXPECT_TRUE(x.has_text("tensor_fp16 800 TFLOP/s"));
  EXPECT_TRUE(x.has_text("HBM 4.00 TB/s"));
  EXPECT_TRUE(x.has_text("L2 10.0 TB/s"));
  EXPECT_TRUE(x.has_text("L1 30.0 TB/s"));
  EXPECT_TRUE(x.has_text("Arithmetic intensity (FLOP/byte)"));
  EXPECT_TRUE(x.has_text("Performance (FLOP/s)"));
  // y: 5 TFLOP/s .. 1.2 PFLOP/s -> decades 1 T .. 10 P (the roof over 10, the
  // lowest sample); every decade labelled, the unit in the axis title.
  for (const char* t : {"1 T", "10 T", "100 T", "1 P", "10 P"}) EXPECT_TRUE(x.has_text(t)) << t;
  EXPECT_EQ(count_occurrences(svg, "class=\"sample\""), 3u);
  EXPECT_EQ(count_occurrences(svg, "class=\"compute-roof\""), 2u);    // the samples' classes only
  EXPECT_EQ(count_occurrences(svg, "class=\"bandwidth-roof\""), 3u);  // L1, L2, HBM
  EXPECT_EQ(count_occurrences(svg, "<polygon"),
            3u + 1u);  // an L1 triangle per sample, one in the legend
  EXPECT_TRUE(x.has_text("AI at HBM"));
  EXPECT_TRUE(x.has_text("fp32 samples"));
  EXPECT_TRUE(x.has_text("tensor_fp16 samples"));
  // A tooltip per sample: operator, params, time, bound, efficiency.
  ASSERT_GE(x.titles.size(), 3u);
  const auto tip = std::find_if(x.titles.begin(), x.titles.end(),
                                [](const std::string& t) { return t.rfind("gemm fp16", 0) == 0; });
  ASSERT_NE(tip, x.titles.end());
  for (const char* part : {"batch=16", "time 100 us", "bound memory_bound(dram)", "efficiency 80%"})
    EXPECT_NE(tip->find(part), std::string::npos) << part << " in " << *tip;
}

// The achieved rate's interval over the traced calls: a capped bar through each
// of the sample's markers, and the range in its tooltip; none without one.
TEST(ClassicRoofline, AchievedRateIntervalIsACappedBarThroughEachMarker) {
  const auto roofs = roofline::machine_roofs(synthetic_machine());
  PointSample with = sample_at("conv fp32", "fp32", 2, 5e12);
  with.achieved_low = 4e12;
  with.achieved_high = 6e12;
  const std::string plain =
      classic_roofline_chart(roofs, {sample_at("conv fp32", "fp32", 2, 5e12)});
  const std::string svg = classic_roofline_chart(roofs, {with});
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  // Three lines (bar and two caps) per marker: L1, L2 and HBM.
  EXPECT_EQ(count_occurrences(svg, "<line ") - count_occurrences(plain, "<line "), 3u * 3u);
  EXPECT_TRUE(std::any_of(x.titles.begin(), x.titles.end(), [](const std::string& t) {
    return t.find("achieved 5.00 TFLOP/s (traced calls 4.00 TFLOP/s to 6.00 TFLOP/s)") !=
           std::string::npos;
  }));
}

TEST(ClassicRoofline, TemplatedKernelNameRoundTripsThroughTheXmlParser) {
  const auto roofs = roofline::machine_roofs(synthetic_machine());
  const std::string name = "void f<a, b>(T&) && g";
  const std::string svg = classic_roofline_chart(roofs, {sample_at(name, "fp32", 2, 5e12)}, name);
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_TRUE(std::find(x.texts.begin(), x.texts.end(), name) != x.texts.end());  // chart title
  ASSERT_FALSE(x.titles.empty());
  EXPECT_TRUE(std::any_of(x.titles.begin(), x.titles.end(),
                          [&](const std::string& t) { return t.rfind(name + "\n", 0) == 0; }));
  EXPECT_EQ(svg.find("f<a"), std::string::npos);
  if (find_on_path("xmllint").empty())
    GTEST_SKIP() << "xmllint not installed (apt install libxml2-utils)";
  test::TempDir dir;
  write_file(dir.file("t.svg"), svg);
  const auto r = test::run_process(
      {"/bin/sh", "-c",
       "xmllint --xpath 'string(//*[local-name()=\"text\"][1])' " + dir.file("t.svg")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  EXPECT_EQ(out, name);
}

TEST(Ceilings, OneRowPerCeilingGroupedByKind) {
  const std::string svg = ceilings_chart(synthetic_machine());
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(count_occurrences(svg, "class=\"ceiling\""), 6u);
  EXPECT_TRUE(x.has_text("Compute (FLOP/s)"));
  EXPECT_TRUE(x.has_text("Bandwidth (B/s)"));
  EXPECT_TRUE(x.has_text("Latency (s), lower is better"));
  EXPECT_TRUE(x.has_text("800 TFLOP/s  (80.0%)"));
  EXPECT_TRUE(x.has_text("2.0 us"));
}

TEST(WorkingSet, CurveRoofsAndL2Size) {
  const Machine m = synthetic_machine();
  const std::string svg = working_set_chart(m);
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(count_occurrences(svg, "class=\"sample\""), m.working_set.size());
  EXPECT_TRUE(x.has_text("L2 size 50.0 MiB"));
  EXPECT_TRUE(x.has_text("HBM roof 4.00 TB/s"));
  EXPECT_TRUE(x.has_text("L1 roof 30.0 TB/s"));
  EXPECT_TRUE(x.has_text("10 MB"));  // x ticks in bytes
}

// A series of `op` at `precision` along batch with these points; its tooltips
// start "<op> <precision> batch=<x>".
roofline::Series batch_series(const std::string& op, const std::string& precision,
                              std::vector<roofline::SeriesPoint> points) {
  roofline::Series series;
  series.op = op;
  series.precision = precision;
  series.parameter = "batch";
  series.points = std::move(points);
  return series;
}

// A conv batch series on the synthetic machine (Tensor-Core work, 3 launches).
std::vector<Point> synthetic_points(const std::string& op = "conv") {
  std::vector<Point> points;
  for (int b = 1; b <= 256; b *= 2) {
    Point p;
    p.op = op;
    p.precision = "fp16";
    p.seq = static_cast<std::int64_t>(points.size());
    p.params = {{"batch", b}};
    p.timing.call = TimeStats{.median_s = 20e-6 + b * 1e-6};
    p.timing.kernel_time_s = 5e-6 + b * 0.9e-6;
    p.timing.launches = 3;
    p.counters = {{"tensor_fp16_flops", b * 1e9}, {"fp32_flops", b * 1e6},
                  {"dram_read_bytes", b * 2e6},   {"dram_write_bytes", b * 1e6},
                  {"l2_bytes", b * 6e6},          {"l1_bytes", b * 9e6}};
    points.push_back(p);
  }
  return points;
}

TEST(TimeVsParameter, MeasuredTimeAndEveryBoundAsLines) {
  const auto roofs = roofline::machine_roofs(synthetic_machine());
  roofline::Series series = batch_series("conv", "fp16", {});
  for (const Point& p : synthetic_points())
    series.points.push_back(
        {0, p.params.at("batch").get<double>(), roofline::point_bounds(p, roofs), {}});
  const std::string svg = time_vs_parameter_chart(series);
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(count_occurrences(svg, "class=\"series\""), 8u);  // all but transfer (no copies)
  EXPECT_EQ(count_occurrences(svg, "class=\"point\""), 2u * 9u);
  for (const char* t : {"1", "2", "256", "batch", "Time per call (s)", "launch N x L",
                        "Tensor-Core compute", "CUDA-core compute", "HBM"})
    EXPECT_TRUE(x.has_text(t)) << t;
}

// A measured time with its 95% interval, median +- half.
TimeStats stats(double median, double half) {
  return TimeStats{.median_s = median, .ci_low_s = median - half, .ci_high_s = median + half};
}

// One conv call per batch 1, 2, 4, ... last: the three times with their
// intervals, one kernel, `counters` (per sample) times the batch.
roofline::Series timed_series(int last, const std::map<std::string, double>& counters) {
  const auto roofs = roofline::machine_roofs(synthetic_machine());
  roofline::Series series = batch_series("conv", "fp16", {});
  for (int b = 1; b <= last; b *= 2) {
    Point p;
    p.op = "conv";
    p.timing.call = stats(60e-6 + b * 1e-6, 2e-6);
    p.timing.stream = stats(40e-6 + b * 1e-6, 1e-6);
    p.timing.graph = stats(10e-6 + b * 1e-6, 0.5e-6);
    p.timing.kernel_time_s = 5e-6 + b * 0.9e-6;
    p.timing.launches = 1;
    for (const auto& [name, per_sample] : counters) p.counters[name] = b * per_sample;
    series.points.push_back({0, static_cast<double>(b), roofline::point_bounds(p, roofs), {}});
  }
  return series;
}

// T_call, T_stream and T_graph, each with its 95% interval as a band, and a
// legend; a point without an interval has no band there.
TEST(TimeVsParameter, ThreeMeasuredTimesWithTheirIntervalBands) {
  roofline::Series series = timed_series(8, {{"fp32_flops", 1e9}, {"dram_read_bytes", 2e6}});
  const std::string svg = time_vs_parameter_chart(series);
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(count_occurrences(svg, "class=\"band\""), 3u);
  EXPECT_EQ(count_occurrences(svg, "<polygon "), 3u);
  // Per band: 4 low edge points left to right, then 4 high edge points back.
  EXPECT_EQ(count_occurrences(svg, "class=\"point\""), 4u * 4u);  // T_stream, T_call, T_graph, T_k
  for (const char* t :
       {"T_stream: calls back to back", "T_call: one synchronized call",
        "T_graph: CUDA graph replay", "kernel time T_k", "shaded: 95% interval of the median"})
    EXPECT_TRUE(x.has_text(t)) << t;
  const auto tip =
      std::find(x.titles.begin(), x.titles.end(),
                "conv fp16 batch=2\nT_graph: CUDA graph replay: " + format_si(12e-6, "s") +
                    " (95% interval " + format_si(11.5e-6, "s") + " to " + format_si(12.5e-6, "s") +
                    ") at batch 2");
  EXPECT_NE(tip, x.titles.end());
  // An older run: T_call only, no interval: one line, no band, no band legend.
  for (roofline::SeriesPoint& p : series.points) {
    p.bounds.stream.reset();
    p.bounds.graph.reset();
    p.bounds.call->ci_low_s.reset();
  }
  const std::string old = time_vs_parameter_chart(series);
  EXPECT_EQ(count_occurrences(old, "class=\"band\""), 0u);
  EXPECT_EQ(old.find("T_stream"), std::string::npos);
  EXPECT_NE(old.find(">T_call: one synchronized call<"), std::string::npos);
  EXPECT_EQ(old.find("shaded: 95% interval"), std::string::npos);
}

// T_k's band spans the fastest to the slowest traced call, and the legend says so.
TEST(TimeVsParameter, KernelTimeBandSpansTheTracedCalls) {
  roofline::Series series = timed_series(8, {{"fp32_flops", 1e9}, {"dram_read_bytes", 2e6}});
  for (roofline::SeriesPoint& p : series.points) {
    p.bounds.kernel_low_s = *p.bounds.kernel_s * 0.9;
    p.bounds.kernel_high_s = *p.bounds.kernel_s * 1.2;
  }
  const std::string svg = time_vs_parameter_chart(series);
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(count_occurrences(svg, "class=\"band\""), 4u);
  EXPECT_NE(svg.find("kernel time T_k: fastest to slowest traced call"), std::string::npos);
  EXPECT_TRUE(
      x.has_text("shaded: 95% interval of the median; T_k's: fastest to slowest traced call"));
}

// A point without a value breaks its line and band instead of being bridged: on
// the H200 sample the L1 bound of fp16 conv2d fwd is left out at batch 2 and from
// 16 (TMA loads), and a call that cannot be captured has no T_graph. A run of one
// point of a bound keeps its value as a dot.
TEST(TimeVsParameter, AMissingValueBreaksItsLineAndBand) {
  roofline::Series series =
      timed_series(16, {{"fp32_flops", 1e9}, {"l1_bytes", 9e6}, {"l2_bytes", 6e6}});
  // L1 at batch 1, 4, 8 only; T_graph at every batch but 4.
  for (std::size_t i : {1u, 4u})
    series.points[i].bounds.levels[static_cast<std::size_t>(Level::l1)].time_s.reset();
  series.points[2].bounds.graph.reset();
  const std::string svg = time_vs_parameter_chart(series);
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  // The group of a line: from its title to the end of its group.
  const auto group = [&](const std::string& title) {
    const std::size_t at = svg.find("<g class=\"series\"><title>" + title + "</title>");
    EXPECT_NE(at, std::string::npos) << title;
    return svg.substr(at, svg.find("</g>", at) - at);
  };
  const std::string l1 = group("L1");
  EXPECT_EQ(count_occurrences(l1, "<polyline "), 2u);  // batch 1 alone, then 4-8
  EXPECT_EQ(count_occurrences(l1, "<circle "), 1u);    // the dot of batch 1
  const std::string graph = group("T_graph: CUDA graph replay");
  EXPECT_EQ(count_occurrences(graph, "<polyline "), 2u);  // batch 1-2, then 8-16
  EXPECT_EQ(count_occurrences(group("T_stream: calls back to back"), "<polyline "), 1u);
  const std::size_t band = svg.find("<title>T_graph: CUDA graph replay: 95% interval");
  ASSERT_NE(band, std::string::npos);
  EXPECT_EQ(count_occurrences(svg.substr(band, svg.find("</g>", band) - band), "<polygon "), 2u);
  EXPECT_EQ(count_occurrences(svg, "class=\"point\""),
            4u * 5u - 1u);  // T_stream, T_call, T_graph, T_k
}

// ---- Time-based complexity chart ------------------------------------------------------

// A chart whose ranges have the plot area's aspect (5.8 x 4.7 decades for 580 x
// 470 px): nothing is widened, 100 px per decade, so pixels are exact:
// x px = 96 + 100 (log10 Q - 4), y px = 582 - 100 (log10 W - 8).
roofline::ComplexityChart fixed_complexity() {
  roofline::ComplexityChart c;
  c.peak = 1e14;
  c.peak_name = "tensor_fp16";
  c.bandwidth = 1e12;
  c.balance = 100;
  c.launch_cost_s = 1e-5;
  c.x_min = 1e4;
  c.x_max = std::pow(10.0, 9.8);
  c.y_min = 1e8;
  c.y_max = std::pow(10.0, 12.7);
  c.balance_line = {c.x_min, 100 * c.x_min, c.x_max, 100 * c.x_max};
  roofline::ComplexityPoint compute;  // AI 1e4 >= 100: W' = T P, Q' = W' / AI
  compute.index = 0;
  compute.bytes = 1e6;
  compute.flops = 1e10;
  compute.intensity = 1e4;
  compute.peak = 1e14;
  compute.time_s = 1e-3;
  compute.compute_side = true;
  compute.runtime_flops = 1e11;
  compute.runtime_bytes = 1e7;
  compute.lost_s = 0.9e-3;
  compute.launches = 1;
  compute.drawable = true;
  roofline::ComplexityPoint memory = compute;  // AI 10 < 100: Q' = T B, W' = Q' AI
  memory.index = 1;
  memory.bytes = 1e8;
  memory.flops = 1e9;
  memory.intensity = 10;
  memory.compute_side = false;
  memory.runtime_bytes = 1e9;
  memory.runtime_flops = 1e10;
  memory.launches = 4;
  roofline::ComplexityPoint no_bytes = compute;
  no_bytes.index = 2;
  no_bytes.bytes = 0;
  no_bytes.drawable = false;
  c.points = {compute, memory, no_bytes};
  for (std::int64_t n : {1, 4}) {
    roofline::LaunchFloor f;
    f.launches = n;
    f.time_s = static_cast<double>(n) * 1e-5;
    const double x = f.time_s * c.bandwidth, y = f.time_s * c.peak;
    f.vertical = {x, c.y_min, x, y};
    f.horizontal = {c.x_min, y, x, y};
    c.launch_floors.push_back(f);
  }
  c.notes = {"conv fp16 seq 2: 0 DRAM bytes, not drawable on log axes",
             "conv fp16 seq 3: left out (no time)"};
  return c;
}

TEST(TimeComplexity, AxesInBytesFlopsAndSecondsPointsSegmentsFloors) {
  const std::string name = "void conv<half, Tile<64>>(Params&) && 'x'";
  const std::vector<ComplexityMark> marks = {{name + "\nbatch=1", "compute_bound(tensor_core)"},
                                             {"conv fp32\nbatch=64", "memory_bound(dram)"},
                                             {"not drawn", "launch_bound"}};
  const std::string svg = time_complexity_chart(fixed_complexity(), marks, "Complexity <test>");
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  // Titles of the four axes.
  for (const char* t : {"Complexity <test>", "HBM bytes Q", "FLOPs W",
                        "Time at the HBM roof: Q / B (s)", "Time at the compute roof: W / P (s)"})
    EXPECT_TRUE(x.has_text(t)) << t;
  // Bottom: bytes; left: FLOPs; top: bytes / B; right: FLOPs / P, every decade.
  for (const char* t :
       {"10 kB", "100 kB", "1 MB", "10 MB", "100 MB", "1 GB", "100 M", "1 G", "10 G", "100 G",
        "1 T", "10 ns", "100 ns", "1 us", "10 us", "100 us", "1 ms", "10 ms"})
    EXPECT_TRUE(x.has_text(t)) << t;
  // Points: complexity (filled) and run-time (open) joined by a segment; the
  // point without bytes is not drawn but counted.
  EXPECT_EQ(count_occurrences(svg, "class=\"point\""), 2u);
  EXPECT_NE(svg.find("<line x1=\"296\" y1=\"382\" x2=\"396\" y2=\"282\""), std::string::npos);
  EXPECT_NE(svg.find("<circle cx=\"296\" cy=\"382\" r=\"3.5\" stroke=\"#ffffff\" fill=\"" +
                     std::string(bound_color("compute_bound(tensor_core)")) + "\""),
            std::string::npos);
  EXPECT_NE(
      svg.find("<circle cx=\"396\" cy=\"282\" r=\"3.5\" stroke=\"" +
               std::string(bound_color("compute_bound(tensor_core)")) + "\" fill=\"#ffffff\""),
      std::string::npos);
  EXPECT_NE(svg.find("<line x1=\"496\" y1=\"482\" x2=\"596\" y2=\"382\""), std::string::npos);
  EXPECT_TRUE(x.has_text("2 points not drawn: no HBM bytes, no time or no work"));
  // Balance line y = 100 x across the plot, labelled with its value.
  EXPECT_EQ(count_occurrences(svg, "class=\"balance\""), 1u);
  EXPECT_NE(svg.find("<line x1=\"296\" y1=\"582\" x2=\"676\" y2=\"202\""), std::string::npos);
  EXPECT_TRUE(x.has_text("balance " + format_si(100.0, "FLOP/B")));
  // Launch floors: an L per launch count, corner on the balance line.
  EXPECT_EQ(count_occurrences(svg, "class=\"launch-floor\""), 2u);
  EXPECT_NE(svg.find("<polyline points=\"396,582 396,482 96,482\" stroke=\"" +
                     std::string(color(Bound::launch)) + "\""),
            std::string::npos);
  EXPECT_NE(svg.find("<polyline points=\"456.21,582 456.21,421.79 96,421.79\""), std::string::npos);
  EXPECT_TRUE(x.has_text("floor, N=1"));
  EXPECT_TRUE(x.has_text("N=4"));
  // Iso-time contours: one L per time decade (10 us coincides with N=1's floor).
  EXPECT_NE(svg.find("<polyline points=\"396,582 396,482 96,482\" stroke=\"#9fb3c8\""),
            std::string::npos);
  // Tooltips, names escaped and decoded back exactly; legend of the classes.
  EXPECT_NE(std::find(x.titles.begin(), x.titles.end(), name + "\nbatch=1"), x.titles.end());
  EXPECT_EQ(svg.find("conv<half"), std::string::npos);
  for (const char* t : {"complexity point (Q, W)", "run-time point (at the roof for T)",
                        "launch floor N x L", "memory_bound(dram)", "compute_bound(tensor_core)"})
    EXPECT_TRUE(x.has_text(t)) << t;
  EXPECT_FALSE(x.has_text("launch_bound")) << "the class of an undrawn point is not in the legend";
  EXPECT_NE(svg.find("class=\"legend outside\""), std::string::npos);
}

TEST(TimeComplexity, NothingToDrawSaysWhy) {
  roofline::ComplexityChart empty;
  empty.notes = {"no DRAM bandwidth roof: not measured"};
  const std::string svg = time_complexity_chart(empty, {});
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_NE(std::find(x.texts.begin(), x.texts.end(),
                      "nothing to draw: no DRAM bandwidth roof: not measured"),
            x.texts.end());
  EXPECT_EQ(count_occurrences(svg, "class=\"point\""), 0u);
}

TEST(TimeComplexity, FromPointsEveryPointHasItsTooltip) {
  const std::string op = "conv<half>&";
  RunRecord record;
  record.run.machine = synthetic_machine();
  record.points = synthetic_points(op);
  const std::vector<Point>& points = record.points;
  const roofline::RunAnalysis analysis = roofline::analyze(record);
  const std::string svg = time_complexity_chart(record, analysis, analysis.sweeps.at(0), "T");
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(count_occurrences(svg, "class=\"point\""), points.size());
  EXPECT_EQ(count_occurrences(svg, "class=\"launch-floor\""), 1u);  // every point: 3 launches
  std::size_t tips = 0;
  for (const std::string& t : x.titles) {
    if (t.rfind(op + " fp16", 0) != 0) continue;
    ++tips;
    for (const char* part :
         {"batch=", "\ntime ", "\nbound ", "\nefficiency ", "\nHBM bytes ", "\nlost to the roof "})
      EXPECT_NE(t.find(part), std::string::npos) << part << " in " << t;
  }
  EXPECT_EQ(tips, points.size());
}

// ---- Decomposition and Tensor Cores ------------------------------------------------------

// A series point with measured parts given (seconds), T = their sum, against `roof`.
roofline::SeriesPoint parts_point(double x, double host, double gaps, double transfer,
                                  double within, double lost, const std::string& roof) {
  roofline::PointBounds b;
  b.kernel_s = within + lost;
  b.time_s = host + gaps + transfer + within + lost;
  b.time_source = roofline::TimeSource::stream;
  b.limiting_roof = roof;
  b.efficiency = within / (within + lost);
  roofline::Classification c;
  c.bottleneck = roofline::Bottleneck::launch_bound;
  roofline::Decomposition& d = c.parts;
  d.time_s = *b.time_s;
  d.time_source = roofline::TimeSource::stream;
  d.separated = true;
  d.host_overhead_s = host;
  d.device_gaps_s = gaps;
  d.transfer_s = transfer;
  d.kernel_s = within + lost;
  d.within_roof_s = within;
  d.lost_to_roof_s = lost;
  return {0, x, b, c};
}

TEST(TimeDecomposition, StackedMeasuredPartsInSecondsAndShares) {
  const roofline::Series series =
      batch_series("conv", "<half>",
                   {
                       parts_point(4, 0, 0, 0, 80e-6, 0, "l2"),  // given out of order: sorted by x
                       parts_point(1, 30e-6, 10e-6, 10e-6, 30e-6, 20e-6, "dram"),
                       parts_point(2, 20e-6, 0, 0, 50e-6, 30e-6, "dram"),
                   });
  const std::string svg = time_decomposition_chart(series, "Where <it> goes");
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(count_occurrences(svg, "class=\"bar\""), 3u);
  for (const char* t : {"Where <it> goes", "batch", "1", "2", "4", "Time per call (s)",
                        "Share of the call", "20 us", "100 us", "0%", "40%", "100%"})
    EXPECT_TRUE(x.has_text(t)) << t;
  // Share panel (y 388..548, 160 px), bar 1 centred at 84 + 200 / 2, 48 px wide:
  // within 30% at the bottom, lost 20%, transfer 10%, device gaps 10%, host
  // overhead 30% on top.
  auto rect = [&](const std::string& y, const std::string& h, const std::string& fill) {
    return svg.find("<rect x=\"160\" y=\"" + y + "\" width=\"48\" height=\"" + h +
                    "\" stroke=\"#ffffff\" fill=\"" + fill);
  };
  EXPECT_NE(rect("500", "48", color(Bound::hbm)), std::string::npos);
  EXPECT_NE(rect("468", "32", "url(#lost-"), std::string::npos);
  EXPECT_NE(rect("452", "16", color(Bound::transfer)), std::string::npos);
  EXPECT_NE(rect("436", "16", "#c49c94"), std::string::npos);  // device gaps
  EXPECT_NE(rect("388", "48", color(Bound::launch)), std::string::npos);
  // Bar 3: all kernel time within the L2 roof.
  EXPECT_NE(svg.find("<rect x=\"560\" y=\"388\" width=\"48\" height=\"160\" stroke=\"#ffffff\" "
                     "fill=\"" +
                     std::string(color(Bound::l2)) + "\""),
            std::string::npos);
  EXPECT_EQ(count_occurrences(svg, "<pattern "), 2u);  // a hatch per roof
  // Legend: the parts present, kernel time per roof.
  for (const char* t :
       {"host overhead (T_stream - T_graph)", "device gaps (T_graph - T_k - transfer)", "transfer",
        "kernel time lost to the HBM roof", "kernel time within the HBM roof",
        "kernel time within the L2 roof", "T, the time explained (T_stream)"})
    EXPECT_TRUE(x.has_text(t)) << t;
  EXPECT_FALSE(x.has_text("kernel time lost to the L2 roof"));
  EXPECT_FALSE(x.has_text("not explained"));
  EXPECT_FALSE(x.has_text("host overhead + device gaps (not measured separately)"));
  // T above each bar, and a tooltip per bar with every part.
  EXPECT_TRUE(x.has_text(format_si(100e-6, "s")));
  EXPECT_TRUE(x.has_text(format_si(80e-6, "s")));
  const auto tip = std::find_if(x.titles.begin(), x.titles.end(), [](const std::string& t) {
    return t.rfind("conv <half> batch=1\n", 0) == 0;
  });
  ASSERT_NE(tip, x.titles.end());
  for (const std::string& part :
       {std::string("bound launch_bound"), std::string("efficiency 60%"),
        "host overhead (T_stream - T_graph) " + format_si(30e-6, "s") + " (30%)",
        "device gaps " + format_si(10e-6, "s") + " (10%)",
        "transfer " + format_si(10e-6, "s") + " (10%)",
        "kernels within the HBM roof " + format_si(30e-6, "s") + " (30%)",
        "kernels lost to the roof " + format_si(20e-6, "s") + " (20%)"})
    EXPECT_NE(tip->find(part), std::string::npos) << part << " in " << *tip;
  // Without transfers, no transfer entry.
  const std::string no_xfer = time_decomposition_chart(
      batch_series("conv", "<half>", {parts_point(1, 10e-6, 0, 0, 5e-6, 5e-6, "l1")}), "t");
  EXPECT_EQ(no_xfer.find(">transfer<"), std::string::npos);
  EXPECT_NE(no_xfer.find(">kernel time within the L1 roof<"), std::string::npos);
}

// Measured parts above T (kernels 10 us against T_graph 8 us): the bar rises 2 us
// above the T mark, the legend says what that means and the tooltip says why; an
// older run's bar names its joint host overhead and gaps.
TEST(TimeDecomposition, PartsAboveTAndOlderRunsAreLabelled) {
  roofline::SeriesPoint above = parts_point(1, 37e-6, 0, 0, 10e-6, 0, "dram");
  roofline::Decomposition& d = above.classification.parts;
  d.time_s = 45e-6;
  *above.bounds.time_s = 45e-6;
  d.kernels_above_device_s = 2e-6;
  d.not_explained_s = -2e-6;
  d.notes = {"T_k 10 us (trace pass, 1 kernel) exceeds T_graph 8.0 us by 2.0 us (25%)"};
  roofline::SeriesPoint old = parts_point(2, 40e-6, 0, 0, 10e-6, 0, "dram");
  old.classification.parts.separated = false;
  old.classification.parts.time_source = roofline::TimeSource::call;
  const std::string svg =
      time_decomposition_chart(batch_series("conv", "<half>", {above, old}), "t");
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  for (const char* t :
       {"bar above T: measured parts exceed it (see its tooltip)",
        "host overhead + device gaps (not measured separately)",
        "host overhead (T_stream - T_graph)", "T, the time explained (T_stream or T_call)"})
    EXPECT_TRUE(x.has_text(t)) << t;
  const auto tip = std::find_if(x.titles.begin(), x.titles.end(), [](const std::string& t) {
    return t.rfind("conv <half> batch=1\n", 0) == 0;
  });
  ASSERT_NE(tip, x.titles.end());
  EXPECT_NE(tip->find("\nnot explained " + format_si(-2e-6, "s")), std::string::npos) << *tip;
  EXPECT_NE(tip->find("\nT_k 10 us (trace pass, 1 kernel) exceeds T_graph 8.0 us"),
            std::string::npos)
      << *tip;
  // The T mark of bar 1 lies 2 us below the top of its stack (47 us). The axis
  // runs 0-60 us over 290 px (ticks every 10 us; 1.04 x 50 us passes the last
  // tick, so one more): the stack's top at 72 + 290 (1 - 47 / 60) = 134.83 px, the
  // T mark at 72 + 290 (1 - 45 / 60) = 144.5 px.
  EXPECT_NE(svg.find(" y=\"134.83\" width=\"48\""), std::string::npos);
  EXPECT_NE(svg.find(" y1=\"144.5\" x2=\""), std::string::npos);
}

roofline::SeriesPoint tensor_point(double x, double share, double utilisation) {
  roofline::PointBounds b;
  b.time_s = 1e-4;
  b.kernel_s = 8e-5;
  b.efficiency = 0.5;
  b.tensor_share = share;
  b.tensor_utilisation = utilisation;
  return {0, x, b, {}};
}

TEST(TensorCores, ShareAndUtilisationOnAPercentAxis) {
  const roofline::Series series =
      batch_series("gemm", "fp16",
                   {tensor_point(1, 0.5, 0.1), tensor_point(2, 0.9, 0.2), tensor_point(4, 1.0, 0.3),
                    tensor_point(8, 1.0, 1.2)});
  const std::string svg = tensor_core_chart(series, "TC");
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(count_occurrences(svg, "class=\"series\""), 2u);
  EXPECT_EQ(count_occurrences(svg, "class=\"point\""), 8u);
  for (const char* t : {"0%", "20%", "40%", "60%", "80%", "100%", "1", "2", "4", "8", "batch",
                        "Tensor Cores (%)", "share of the FLOPs", "utilisation (T_tensor / T_k)"})
    EXPECT_TRUE(x.has_text(t)) << t;
  // 120% is drawn at the top as a triangle and said in the legend and at the line's end.
  EXPECT_TRUE(x.has_text("above 100% (counters or roof off)"));
  EXPECT_EQ(count_occurrences(svg, "<polygon"), 2u);
  EXPECT_TRUE(x.has_text("120%"));
  // Exact positions: plot 84..684 x 64..394, x log over [0.8, 10], y over [0, 1.04].
  auto px = [](double v) {
    return 84 + (std::log10(v) - std::log10(0.8)) / (1 - std::log10(0.8)) * 600;
  };
  auto py = [](double v) { return 394 - v / 1.04 * 330; };
  EXPECT_NE(svg.find("<circle cx=\"" + num(px(2)) + "\" cy=\"" + num(py(0.9)) + "\""),
            std::string::npos);
  EXPECT_NE(svg.find("<circle cx=\"" + num(px(1)) + "\" cy=\"" + num(py(0.1)) + "\""),
            std::string::npos);
  const auto tip = std::find_if(x.titles.begin(), x.titles.end(), [](const std::string& t) {
    return t.rfind("share of the FLOPs: 90%\ngemm fp16 batch=2\n", 0) == 0;
  });
  ASSERT_NE(tip, x.titles.end());
  for (const char* part : {"time 100 us", "bound ", "efficiency 50%", "Tensor-Core share 90%",
                           "Tensor-Core utilisation 20%"})
    EXPECT_NE(tip->find(part), std::string::npos) << part << " in " << *tip;
  // Nothing to show: said in the plot.
  roofline::PointBounds none;
  const std::string empty = tensor_core_chart(batch_series("x", "fp16", {{0, 1, none, {}}}));
  EXPECT_NE(empty.find("no point with FLOPs and kernel time"), std::string::npos);
}

// ---- The real H200 sample ------------------------------------------------------------

const RunRecord& sample() {
  static const RunRecord record = test::load_run("samples/sample-run.json.gz");
  return record;
}

struct Chart {
  std::string name;
  std::string svg;
};

std::vector<Chart> sample_charts() {
  const RunRecord& r = sample();
  const roofline::RunAnalysis analysis = roofline::analyze(r);
  const roofline::MachineRoofs& roofs = analysis.roofs;
  std::vector<Chart> charts = {
      {"ceilings", ceilings_chart(r.run.machine)},
      {"working-set", working_set_chart(r.run.machine)},
      {"roofline", classic_roofline_chart(roofs, point_samples(r, analysis),
                                          "Hierarchical Roofline: H200 sample, all points")},
  };
  // The conv2d_fwd fp16 batch sweep (baseline shape, batch varies).
  roofline::Series series = batch_series("conv2d_fwd", "fp16", {});
  for (const roofline::PointAnalysis& pa : analysis.points) {
    const Point& p = r.points[pa.index];
    if (p.op != "conv2d_fwd" || p.precision != "fp16" || p.status != PointStatus::ok) continue;
    if (p.params.value("stride", 0) != 2 || p.params.value("filter", 0) != 3 ||
        p.params.value("filters", 0) != 64)
      continue;
    series.points.push_back({pa.index, p.params.value("batch", 0.0), pa.bounds, pa.classification});
  }
  charts.push_back(
      {"time-vs-batch", time_vs_parameter_chart(series,
                                                "conv2d_fwd fp16 (3x3, 64 filters, stride 2): time "
                                                "against batch size")});
  charts.push_back({"decomposition",
                    time_decomposition_chart(series,
                                             "conv2d_fwd fp16 (3x3, 64 filters, stride 2): where "
                                             "the time goes")});
  charts.push_back(
      {"tensor-cores",
       tensor_core_chart(series, "conv2d_fwd fp16 (3x3, 64 filters, stride 2): Tensor Cores")});
  // Per sweep, as the report draws them.
  for (const roofline::SweepAnalysis& sweep : analysis.sweeps)
    charts.push_back(
        {"complexity-" + sweep.name,
         time_complexity_chart(r, analysis, sweep, "Time-based roofline: " + sweep.name)});
  // An LSTM series (many launches per call), through the model's series grouping.
  for (const roofline::SeriesAnalysis& sa : analysis.series) {
    const roofline::Series& s = sa.series;
    if (s.op != "lstm_training_forward" || s.precision != "fp16") continue;
    charts.push_back(
        {"lstm-decomposition", time_decomposition_chart(s, s.name() + ": where the time goes")});
    charts.push_back({"lstm-tensor-cores", tensor_core_chart(s, s.name() + ": Tensor Cores")});
  }
  return charts;
}

TEST(SampleCharts, ChartsHaveEveryCeilingPointAndSeries) {
  const RunRecord& r = sample();
  const std::string ceilings = ceilings_chart(r.run.machine);
  EXPECT_EQ(count_occurrences(ceilings, "class=\"ceiling\""), r.run.machine.ceilings.size());
  EXPECT_EQ(count_occurrences(working_set_chart(r.run.machine), "class=\"sample\""),
            r.run.machine.working_set.size());
  const roofline::RunAnalysis analysis = roofline::analyze(r);
  const roofline::MachineRoofs& roofs = analysis.roofs;
  const auto samples = point_samples(r, analysis);
  EXPECT_GE(samples.size(), 200u);
  const std::string roof = classic_roofline_chart(roofs, samples);
  EXPECT_EQ(count_occurrences(roof, "class=\"sample\""), samples.size());
  // The sample's measured roofs (H200: wgmma fp16 816 TFLOP/s, HBM read 4.61 TB/s).
  EXPECT_NE(roof.find("tensor_fp16 816 TFLOP/s"), std::string::npos);
  EXPECT_NE(roof.find("HBM 4.61 TB/s"), std::string::npos);
}

TEST(SampleCharts, EverySvgIsWellFormedXml) {
  const bool xmllint = !find_on_path("xmllint").empty();
  test::TempDir dir;
  for (const Chart& c : sample_charts()) {
    const XmlCheck x = check_xml(c.svg);
    EXPECT_TRUE(x.ok) << c.name << ": " << x.error;
    EXPECT_GT(x.elements, 50u) << c.name;
    if (xmllint) {
      write_file(dir.file(c.name + ".svg"), c.svg);
      const auto r = sh("xmllint --noout '" + dir.file(c.name + ".svg") + "'");
      EXPECT_EQ(r.exit_code, 0) << c.name << ": " << r.err;
    }
  }
  if (!xmllint) GTEST_SKIP() << "own checker passed; xmllint not installed (libxml2-utils)";
}

TEST(SampleCharts, EverySvgRendersToANonBlankPng) {
  if (find_on_path("rsvg-convert").empty())
    GTEST_SKIP() << "rsvg-convert not installed (apt install librsvg2-bin)";
  test::TempDir tmp;
  const char* keep = std::getenv("TIMEROOF_PLOTS_OUT");
  const std::string dir = keep && *keep ? keep : tmp.path();
  std::filesystem::create_directories(dir);
  // A blank page of the same size: what an empty render compresses to.
  write_file(dir + "/blank.svg", Svg(960, 640).str());
  ASSERT_EQ(sh("rsvg-convert -o '" + dir + "/blank.png' '" + dir + "/blank.svg'").exit_code, 0);
  const auto blank = std::filesystem::file_size(dir + "/blank.png");
  for (const Chart& c : sample_charts()) {
    const std::string svg = dir + "/" + c.name + ".svg";
    const std::string png = dir + "/" + c.name + ".png";
    write_file(svg, c.svg);
    const auto r = sh("rsvg-convert -o '" + png + "' '" + svg + "'");
    ASSERT_EQ(r.exit_code, 0) << c.name << ": " << r.err;
    const std::string bytes = test::read_file(png);
    EXPECT_GT(bytes.size(), 20u * 1024u) << c.name;
    EXPECT_GT(bytes.size(), 8 * blank) << c.name;
    EXPECT_EQ(bytes.compare(0, 8, "\x89PNG\r\n\x1a\n"), 0) << c.name;
    std::set<char> distinct(bytes.begin(), bytes.end());
    EXPECT_GT(distinct.size(), 200u) << c.name;
  }
  std::filesystem::remove(dir + "/blank.svg");
  std::filesystem::remove(dir + "/blank.png");
}

// The time-based roofline of the sample's LSTM sweep, one chart per compute
// roof: the one chart of the whole sweep put every point on the highest P (the
// largest P_eff, 790 TFLOP/s), so its right axis read W / P 12.0x short for
// the fp32 points; on the fp32 chart P is the fp32 roof (65.9 TFLOP/s), each
// fp32 point's own peak, and the chart is a panel per operator (19 points each).
TEST(SampleCharts, TimeBasedRooflinePerComputeRoofInPanels) {
  const RunRecord& r = sample();
  const roofline::RunAnalysis analysis = roofline::analyze(r);
  const roofline::SweepAnalysis& lstm = analysis.sweeps.at(1);
  ASSERT_EQ(lstm.name, "lstm-default");
  EXPECT_NEAR(lstm.complexity.peak / *analysis.roofs.peak(PrecisionClass::fp32).value, 12.0, 0.05)
      << "the whole sweep's one P";
  ASSERT_EQ(lstm.per_roof.size(), 2u);
  std::size_t points = 0;
  for (const roofline::RoofComplexity& roof : lstm.per_roof) {
    EXPECT_EQ(roof.chart.peak, *analysis.roofs.peak(roof.roof).value) << to_string(roof.roof);
    points += roof.chart.points.size();
  }
  EXPECT_EQ(points, lstm.complexity.points.size());
  const roofline::RoofComplexity& fp32 = lstm.per_roof.at(0);
  ASSERT_EQ(fp32.roof, PrecisionClass::fp32);
  EXPECT_EQ(fp32.chart.points.size(), 76u);
  for (const roofline::ComplexityPoint& cp : fp32.chart.points)
    EXPECT_NEAR(cp.peak / fp32.chart.peak, 1.0, 0.05) << "seq " << r.points[cp.index].seq;
  const std::string svg = time_complexity_charts(r, analysis, fp32, "fp32").at(0);
  const XmlCheck x = check_xml(svg);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(count_occurrences(svg, "class=\"panel\""), 4u);
  EXPECT_EQ(count_occurrences(svg, "class=\"point\""), 76u);
  for (const char* t : {"lstm_inference fp32/fma_only (19 points)",
                        "lstm_backward_weights fp32/fma_only (19 points)"})
    EXPECT_TRUE(x.has_text(t)) << t;
  EXPECT_NE(svg.find("P = 65.9 TFLOP/s (fp32_fma)"), std::string::npos);
  EXPECT_EQ(svg.find("mix in work of other classes"), std::string::npos);
  // The tensor_fp16 points also run fp32/fp16 elementwise kernels: their own
  // peak is below the chart's P, and the chart says by how much.
  const std::string tensor = time_complexity_charts(r, analysis, lstm.per_roof.at(1), "fp16").at(0);
  EXPECT_NE(tensor.find("points mix in work of other classes: their own peak P_eff is 0.46x"),
            std::string::npos);
  EXPECT_EQ(count_occurrences(tensor, "class=\"panel\""), 4u);
}

// A sweep with more operators on one roof than two rows of panels hold is drawn
// as several charts on the same axes, each of which fits an A4 page at the
// printed width (186 mm = 703 CSS px, 273 mm = 1032 px tall): six operators in
// one chart of three rows were 1.3 pages tall.
TEST(SampleCharts, ManyOperatorsOnOneRoofSplitIntoChartsThatFitAPage) {
  RunRecord r = sample();
  const std::size_t n = r.points.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Point p = r.points[i];
    if (p.sweep != "lstm-default" || p.precision != "fp32" ||
        (p.op != "lstm_inference" && p.op != "lstm_backward_data"))
      continue;
    Point copy = p;
    copy.op += "_copy";
    copy.seq += 100000;
    r.points.push_back(std::move(copy));
  }
  const roofline::RunAnalysis analysis = roofline::analyze(r);
  const roofline::RoofComplexity& fp32 = analysis.sweeps.at(1).per_roof.at(0);
  ASSERT_EQ(fp32.roof, PrecisionClass::fp32);
  const std::vector<std::string> charts = time_complexity_charts(r, analysis, fp32, "fp32");
  ASSERT_EQ(charts.size(), 2u);
  const std::regex size(R"re(<svg[^>]* width="([0-9.]+)" height="([0-9.]+)")re");
  std::size_t panels = 0, drawn = 0;
  for (const std::string& svg : charts) {
    ASSERT_TRUE(check_xml(svg).ok);
    panels += count_occurrences(svg, "class=\"panel\"");
    drawn += count_occurrences(svg, "class=\"point\"");
    EXPECT_LE(count_occurrences(svg, "class=\"panel\""), kPanelsPerFigure);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, size)) << svg.substr(0, 300);
    EXPECT_LE(std::stod(m[2]) * 703 / std::stod(m[1]), 1032) << "taller than a printed page";
  }
  EXPECT_EQ(panels, 6u);
  EXPECT_EQ(drawn, fp32.chart.points.size()) << "every point once";
  EXPECT_NE(charts[0].find("fp32, operators 1-4 of 6"), std::string::npos);
  EXPECT_NE(charts[1].find("fp32, operators 5-6 of 6"), std::string::npos);
}

// Spread on the measured points: each run-time point of the time-based
// roofline carries T's 95% interval (time_stats()) as a bar along its iso-AI
// line, and each roof of the ceilings chart the spread of its repeats.
TEST(SampleCharts, MeasuredPointsCarryTheirIntervalOrSpread) {
  const RunRecord& r = sample();
  const roofline::RunAnalysis analysis = roofline::analyze(r);
  const roofline::RoofComplexity& fp32 = analysis.sweeps.at(1).per_roof.at(0);
  std::size_t with_interval = 0;
  for (const roofline::ComplexityPoint& cp : fp32.chart.points) {
    const auto& st = analysis.points[cp.index].bounds.time_stats();
    ASSERT_TRUE(st && st->ci_low_s && st->ci_high_s) << "the sample has every interval";
    ASSERT_TRUE(cp.interval);
    ++with_interval;
    EXPECT_DOUBLE_EQ(cp.interval->x0 / cp.runtime_bytes, *st->ci_low_s / cp.time_s);
    EXPECT_DOUBLE_EQ(cp.interval->y1 / cp.runtime_flops, *st->ci_high_s / cp.time_s);
    EXPECT_LE(cp.interval->y0, cp.runtime_flops);
    EXPECT_GE(cp.interval->y1, cp.runtime_flops);
  }
  const std::string svg = time_complexity_charts(r, analysis, fp32, "fp32").at(0);
  EXPECT_EQ(count_occurrences(svg, "class=\"interval\""), with_interval);
  EXPECT_NE(svg.find("bar with caps: T&apos;s 95% interval"), std::string::npos);
  EXPECT_NE(svg.find("\nT&apos;s 95% interval "), std::string::npos);
  std::size_t spread = 0;
  for (const Ceiling& c : r.run.machine.ceilings) spread += c.repeats > 1 && c.spread > 0;
  EXPECT_GT(spread, 30u);
  const std::string ceilings = ceilings_chart(r.run.machine);
  EXPECT_EQ(count_occurrences(ceilings, "class=\"spread\""), spread);
  // h2d_pageable spreads 43% over its repeats on the H200.
  EXPECT_NE(ceilings.find("repeats, spread 43.1%"), std::string::npos);
}

}  // namespace
}  // namespace timeroof::plots
