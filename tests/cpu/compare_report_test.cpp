// plots/compare_report and plots/compare_charts: the compare report of the
// bundled H100 and H200 samples (the same default sweeps, recorded by the same
// commit) checked as XML with every section, chart and finding; the charts
// against the comparison they draw (each point's ratio, each side's roofs); a
// run compared with itself; names that need escaping; and the files each format
// writes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "core/json_io.hpp"
#include "plots/compare_charts.hpp"
#include "plots/compare_report.hpp"
#include "plots/process.hpp"
#include "plots/svg.hpp"
#include "roofline/compare.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/markdown_check.hpp"
#include "tests/support/run_tool.hpp"
#include "tests/support/xml_check.hpp"

namespace timeroof::plots {
namespace {

using detail::find_on_path;
using roofline::ComparedSide;
using roofline::Comparison;
using test::check_xml;
using test::count_occurrences;
using test::read_file;
using test::TempDir;
using test::XmlCheck;

ComparedSide side(const std::string& sample) {
  return roofline::analyse_side(test::load_runs("samples/" + sample));
}

const ComparedSide& h100() {
  static const ComparedSide s = side("sample-run-h100.json.gz");
  return s;
}
const ComparedSide& h200() {
  static const ComparedSide s = side("sample-run.json.gz");
  return s;
}

bool any_contains(const std::vector<std::string>& texts, const std::string& part) {
  for (const std::string& t : texts)
    if (t.find(part) != std::string::npos) return true;
  return false;
}

TEST(XmlChecker, SkipsAnHtmlDocumentTypeButStillNeedsARoot) {
  EXPECT_TRUE(check_xml("<!DOCTYPE html>\n<html lang=\"en\"><body/></html>\n").ok);
  EXPECT_FALSE(check_xml("<!DOCTYPE html>\n").ok);
  EXPECT_FALSE(check_xml("<!DOCTYPE html\n<html/>").ok) << "the declaration swallows the tag";
}

TEST(CompareReport, H100AgainstH200IsWellFormedWithEverySectionChartAndFinding) {
  const Comparison c = roofline::compare_runs(h100(), h200());
  const CompareReport r = render_compare_report(c, h100(), h200());
  const XmlCheck page = check_xml(r.html);
  ASSERT_TRUE(page.ok) << page.error;
  EXPECT_EQ(r.html.find("<?xml"), std::string::npos) << "no XML declaration inside HTML";
  EXPECT_NE(r.html.find("<title>timeroof compare: NVIDIA H200 against NVIDIA H100 80GB "
                        "HBM3</title>"),
            std::string::npos);
  for (const char* section :
       {">Summary</h2>", ">What differs in the provenance</h2>", ">Findings</h2>", ">Roofs</h2>",
        ">Sweep conv2d-default</h2>", ">Sweep lstm-default</h2>", ">Provenance</h2>",
        ">conv2d-default conv2d_bwd_data fp16 against batch</h3>"})
    EXPECT_NE(r.html.find(section), std::string::npos) << section;
  // Every finding, escaped (they hold ">=" and "<=").
  ASSERT_FALSE(c.findings.empty());
  for (const std::string& f : c.findings)
    EXPECT_NE(r.html.find("<li>" + escape(f) + "</li>"), std::string::npos) << f;
  // Per sweep its overlay and its ratio chart, per series its time chart.
  ASSERT_EQ(c.series.size(), 14u);
  EXPECT_EQ(r.charts.size(), 2 + 2 + c.series.size());
  EXPECT_EQ(count_occurrences(r.html, "<svg"), r.charts.size()) << "every chart inline";
  std::set<std::string> names;
  for (const auto& [file, svg] : r.charts) {
    const XmlCheck x = check_xml(svg);
    EXPECT_TRUE(x.ok) << file << ": " << x.error;
    EXPECT_TRUE(std::regex_match(file, std::regex("[A-Za-z0-9._-]+\\.svg"))) << file;
    EXPECT_TRUE(names.insert(file).second) << "one file per chart: " << file;
    EXPECT_NE(r.markdown.find("](" + file + ")"), std::string::npos) << file;
  }
  // The roofs table: each roof's ratio and verdict as the comparison has them.
  for (const roofline::RoofComparison& roof : c.roofs)
    EXPECT_NE(r.html.find("<td>" + roof.name + "</td>"), std::string::npos) << roof.name;
  EXPECT_NE(r.html.find(escape(roofline::format_ratio(c.roofs.front().ratio))), std::string::npos);
  // Self-contained: the only URL is the SVG namespace.
  EXPECT_EQ(count_occurrences(r.html, "http://"),
            count_occurrences(r.html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(r.html.find("<script"), std::string::npos);
  const std::string xmllint = find_on_path("xmllint");
  if (xmllint.empty()) GTEST_SKIP() << "own checker passed; xmllint not installed (libxml2-utils)";
  TempDir dir;
  const std::string index =
      write_compare_report(c, h100(), h200(), dir.path(), CompareReportFormat::html);
  const test::ToolResult xml = test::run_process({xmllint, "--noout", index});
  EXPECT_EQ(xml.exit_code, 0) << xml.err.substr(0, 2000);
}

TEST(CompareCharts, TheOverlayDrawsEachSidesRoofsAndPointsInItsColour) {
  const Comparison c = roofline::compare_runs(h100(), h200());
  const CompareReport r = render_compare_report(c, h100(), h200());
  const std::string& overlay = r.charts.at(0).second;
  ASSERT_NE(r.charts.at(0).first.find("overlay"), std::string::npos) << r.charts.at(0).first;
  const XmlCheck x = check_xml(overlay);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_TRUE(x.has_text("NVIDIA H100 80GB HBM3: roofs and points"));
  EXPECT_TRUE(x.has_text("NVIDIA H200: roofs and points"));
  EXPECT_GT(count_occurrences(overlay, kBaseColor), 20u);
  EXPECT_GT(count_occurrences(overlay, kOtherColor), 20u);
  // Each side's HBM roof at the value its model uses.
  for (const auto& [label, s] :
       {std::pair{"NVIDIA H100 80GB HBM3", &h100()}, std::pair{"NVIDIA H200", &h200()}}) {
    const roofline::Roof& hbm = s->analyses.at(0).roofs.bandwidth(Level::dram);
    ASSERT_TRUE(hbm.available());
    EXPECT_TRUE(any_contains(
        x.titles, std::string(label) + ": HBM bandwidth " + format_si(*hbm.value, "B/s")))
        << label;
  }
  // The samples of both sides: one hover group per measured point and side.
  std::size_t conv_points = 0;
  for (const roofline::PointComparison& p : c.points) conv_points += p.sweep == "conv2d-default";
  const std::size_t samples = count_occurrences(overlay, "class=\"sample\"");
  EXPECT_GT(samples, conv_points) << "both sides' points";
  EXPECT_LE(samples, 2 * conv_points);
}

TEST(CompareCharts, TimeAndRatioChartsCarryEachPointsTimesAndRatio) {
  const Comparison c = roofline::compare_runs(h100(), h200());
  const roofline::ComparedSeries* bwd_data = nullptr;
  for (const roofline::ComparedSeries& s : c.series)
    if (s.op == "conv2d_bwd_data" && s.precision == "fp16") bwd_data = &s;
  ASSERT_NE(bwd_data, nullptr);
  const std::vector<ComparedTimes> times = compared_times(c, *bwd_data, h100(), h200());
  ASSERT_EQ(times.size(), 11u);
  const SideLabels labels{c.base_label, c.other_label};
  const std::string time_svg = compare_time_chart(times, labels, "batch", "t");
  const XmlCheck t = check_xml(time_svg);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(count_occurrences(time_svg, "class=\"point\""), 22u) << "a marker per point and side";
  EXPECT_EQ(count_occurrences(time_svg, "class=\"band\""), 2u) << "each side's 95% interval";
  EXPECT_EQ(count_occurrences(time_svg, "class=\"roof\""), 2u) << "each side's T_roof";
  for (const ComparedTimes& ct : times) {
    EXPECT_TRUE(any_contains(t.titles, "other/base " + roofline::format_ratio(ct.point->ratio)))
        << ct.x;
    EXPECT_TRUE(any_contains(
        t.titles, "NVIDIA H200: T_stream " + format_number(ct.point->other_time_s, hint::time_3)))
        << ct.x;
  }
  std::vector<RatioSeries> ratios;
  for (const roofline::ComparedSeries& s : c.series)
    if (s.sweep == "conv2d-default")
      ratios.push_back({s.name(), compared_times(c, s, h100(), h200())});
  const std::string ratio_svg = ratio_chart(ratios, 0.05, labels, "batch", "r");
  const XmlCheck q = check_xml(ratio_svg);
  ASSERT_TRUE(q.ok) << q.error;
  EXPECT_EQ(count_occurrences(ratio_svg, "class=\"point\""), 6u * 11u);
  EXPECT_EQ(count_occurrences(ratio_svg, "class=\"threshold-band\""), 1u);
  EXPECT_TRUE(q.has_text("shaded: within the threshold, +-5.0%"));
  for (const RatioSeries& s : ratios) {
    EXPECT_TRUE(q.has_text(s.name)) << "legend: " << s.name;
    for (const ComparedTimes& ct : s.points)
      EXPECT_TRUE(any_contains(q.titles, "T other / T base " +
                                             roofline::format_ratio(ct.point->ratio) + ": " +
                                             roofline::to_string(ct.point->verdict)))
          << s.name << " " << ct.x;
  }
}

TEST(CompareReport, ARunAgainstItselfSaysNothingDiffers) {
  const Comparison c = roofline::compare_runs(h200(), h200());
  const CompareReport r = render_compare_report(c, h200(), h200());
  ASSERT_TRUE(check_xml(r.html).ok);
  EXPECT_NE(r.html.find("No point differs beyond its noise and the threshold."), std::string::npos);
  EXPECT_NE(r.html.find("Nothing: the same GPU"), std::string::npos);
  EXPECT_EQ(r.html.find("class=\"findings\""), std::string::npos) << "no findings list";
}

TEST(CompareReport, NamesFromTheDataAreEscapedEverywhere) {
  const std::string hostile = "<script>alert('&')</script>\"|`\xef\xbf\xbe";
  RunRecord run = h200().runs.at(0);
  run.run.machine.gpu.name = "GPU " + hostile;
  run.run.command_line = "timeroof " + hostile;
  run.run.host = hostile;
  for (Point& p : run.points) p.sweep = "sweep" + hostile;
  const ComparedSide base = roofline::analyse_side({run});
  run.run.machine.gpu.name += " 2";  // a provenance change, so it is printed too
  const ComparedSide other = roofline::analyse_side({run});
  const Comparison c = roofline::compare_runs(base, other);
  const CompareReport r = render_compare_report(c, base, other);
  const XmlCheck page = check_xml(r.html);
  ASSERT_TRUE(page.ok) << page.error;
  EXPECT_EQ(r.html.find("<script"), std::string::npos);
  EXPECT_EQ(r.html.find("\xef\xbf\xbe"), std::string::npos);
  EXPECT_NE(r.html.find("GPU &lt;script&gt;alert(&apos;&amp;&apos;)&lt;/script&gt;"),
            std::string::npos);
  EXPECT_EQ(test::unescaped_markup(r.markdown), "");
  for (const auto& [file, svg] : r.charts) {
    const XmlCheck x = check_xml(svg);
    EXPECT_TRUE(x.ok) << file << ": " << x.error;
    EXPECT_EQ(svg.find("<script"), std::string::npos) << file;
    EXPECT_TRUE(std::regex_match(file, std::regex("[A-Za-z0-9._-]+\\.svg"))) << file;
  }
}

TEST(CompareReport, HtmlWritesOnePageAndMarkdownItsCharts) {
  const Comparison c = roofline::compare_runs(h100(), h200());
  TempDir dir;
  const std::string html_dir = dir.file("html"), md_dir = dir.file("md");
  EXPECT_EQ(write_compare_report(c, h100(), h200(), html_dir, CompareReportFormat::html),
            html_dir + "/index.html");
  std::set<std::string> written;
  for (const auto& entry : std::filesystem::directory_iterator(html_dir))
    written.insert(entry.path().filename().string());
  EXPECT_EQ(written, std::set<std::string>{"index.html"}) << "self-contained";

  EXPECT_EQ(write_compare_report(c, h100(), h200(), md_dir, CompareReportFormat::markdown),
            md_dir + "/report.md");
  const std::string markdown = read_file(md_dir + "/report.md");
  std::size_t charts = 0;
  const std::regex chart_link("\\]\\(([^)]+\\.svg)\\)");
  for (std::sregex_iterator m(markdown.begin(), markdown.end(), chart_link), end; m != end;
       ++m, ++charts) {
    const std::string file = md_dir + "/" + (*m)[1].str();
    ASSERT_TRUE(std::filesystem::is_regular_file(file)) << file;
    EXPECT_TRUE(check_xml(read_file(file)).ok) << file;
  }
  EXPECT_EQ(charts, 18u);
  EXPECT_FALSE(std::filesystem::exists(md_dir + "/index.html"));
}

}  // namespace
}  // namespace timeroof::plots
