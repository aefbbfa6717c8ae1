// plots/report: the HTML and Markdown report of the real H200 sample
// (samples/sample-run.json.gz) and of a run whose names and reasons contain <, >, &,
// | and backticks. index.html is checked as XML (xmllint) and as HTML (xmllint
// --html: only the HTML4 parser's unknown-tag complaints about SVG and figure are
// allowed), for external references, for every section, the findings and one
// table row per point; report.md's charts must exist as SVG files (or PNG / PDF
// converted by rsvg-convert). With Debian's `chromium` installed the page is
// screenshot headless and must not be blank, and its tables must fit A4's width.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/json_io.hpp"
#include "plots/process.hpp"
#include "plots/report.hpp"
#include "plots/report_document.hpp"
#include "plots/svg.hpp"
#include "roofline/analysis.hpp"
#include "roofline/findings.hpp"
#include "roofline/glossary.hpp"
#include "roofline/machine_roofs.hpp"
#include "roofline/sweep_fit.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/markdown_check.hpp"
#include "tests/support/run_tool.hpp"
#include "tests/support/xml_check.hpp"

namespace timeroof::plots {
namespace {

using detail::find_on_path;
using test::count_occurrences;
using test::read_file;
using test::run_process;
using test::TempDir;
using test::ToolResult;

const RunRecord& sample() {
  static const RunRecord record = test::load_run("samples/sample-run.json.gz");
  return record;
}

// A page's HTML without the break opportunities (<wbr/>) its table cells put in
// long words.
std::string without_breaks(const std::string& html) {
  return std::regex_replace(html, std::regex("<wbr/>"), "");
}

// A sample's report, written once into a directory kept for the whole test.
struct Written {
  TempDir dir;
  std::string html;
  std::string html_text;  // html without the break opportunities (<wbr/>) in long words
  std::string markdown;
  explicit Written(const std::vector<RunRecord>& runs) {
    write_report(runs, dir.path());
    html = read_file(dir.file("index.html"));
    html_text = without_breaks(html);
    markdown = read_file(dir.file("report.md"));
  }
};
const Written& written() {
  static const Written w({sample()});
  return w;
}
// What `timeroof run` shows without a GPU: every operator family's default sweep
// and the resnet50 model table, two runs (22 MB of JSON: read once).
const std::vector<RunRecord>& full_sample() {
  static const std::vector<RunRecord> runs =
      test::load_runs("samples/sample-full-run-h200.json.gz");
  return runs;
}
const Written& written_full_sample() {
  static const Written w(full_sample());
  return w;
}

// Chromium for the browser checks, under either of its names; empty where absent.
std::string chromium_path() {
  const std::string chromium = find_on_path("chromium");
  return chromium.empty() ? find_on_path("chromium-browser") : chromium;
}

TEST(Report, SampleReportIsWritten) {
  const Written& w = written();
  EXPECT_GT(w.html.size(), 10000u);
  EXPECT_GT(w.markdown.size(), 1000u);
  EXPECT_EQ(w.html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(w.html.find("<style>"), std::string::npos) << "inline CSS";
  EXPECT_NE(w.html.find("max-width"), std::string::npos);
  EXPECT_NE(w.html.find("<svg"), std::string::npos) << "inline SVG";
  EXPECT_EQ(w.html.find("<?xml"), std::string::npos) << "no XML declaration inside HTML";
}

TEST(Report, HtmlParsesAsXmlAndAsHtml) {
  const test::XmlCheck strict = test::check_xml(written().html);  // no raw > in text, nor in CSS
  EXPECT_TRUE(strict.ok) << strict.error;
  const std::string xmllint = find_on_path("xmllint");
  if (xmllint.empty()) GTEST_SKIP() << "xmllint not installed (Debian: libxml2-utils)";
  const std::string path = written().dir.file("index.html");
  const ToolResult xml = run_process({xmllint, "--noout", path});
  EXPECT_EQ(xml.exit_code, 0) << xml.err.substr(0, 2000);
  const ToolResult html = run_process({xmllint, "--html", "--noout", path});
  // libxml2's HTML parser is HTML4: it names SVG and <figure> as unknown tags.
  // Anything else (unclosed or misnested tags, bad entities) is a real error.
  const std::regex unknown_tag("Tag [A-Za-z]+ invalid");
  std::istringstream lines(html.err);
  std::string line;
  int errors = 0;
  while (std::getline(lines, line)) {
    if (line.find("parser error") == std::string::npos &&
        line.find("parser warning") == std::string::npos)
      continue;
    if (!std::regex_search(line, unknown_tag)) {
      ++errors;
      ADD_FAILURE() << line;
    }
    if (errors > 5) break;
  }
}

TEST(Report, NothingIsFetchedFromTheNetwork) {
  const std::string& html = written().html;
  for (const char* bad : {"src=\"http", "href=\"http", "src='http", "href='http", "url(http",
                          "url(//", "@import", "<script", "<link", "<iframe", "<img"})
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;
  EXPECT_EQ(count_occurrences(html, "https://"), 0u);
  // The only http:// text is the SVG namespace name (an identifier, never fetched).
  EXPECT_EQ(count_occurrences(html, "http://"),
            count_occurrences(html, "xmlns=\"http://www.w3.org/2000/svg\""));
}

TEST(Report, EverySectionIsThere) {
  const Written& w = written();
  for (const char* h : {"Summary", "Findings", "Machine roofs", "Sweep conv2d-default",
                        "Sweep lstm-default", "Provenance"}) {
    EXPECT_NE(w.html.find(std::string(">") + h + "</h3>"), std::string::npos) << h;
    EXPECT_NE(w.markdown.find(std::string("### ") + h + "\n"), std::string::npos) << h;
  }
  const timeroof::Run& run = sample().run;
  for (const std::string& text :
       {run.machine.gpu.name, run.machine.gpu.uuid, run.machine.gpu.chip,
        run.machine.gpu.versions.driver, run.machine.gpu.versions.cudnn, run.git_sha,
        run.started_at, run.finished_at, run.host, run.tool_version}) {
    ASSERT_FALSE(text.empty());
    EXPECT_NE(w.html_text.find(escape(text)), std::string::npos) << text;
    EXPECT_NE(w.markdown.find(text), std::string::npos) << text;
  }
  EXPECT_NE(w.html_text.find(escape(run.command_line)), std::string::npos);
  EXPECT_NE(w.html.find("failed 1, ok 259"), std::string::npos) << "counts per status";
  // Every ceiling has a row.
  EXPECT_EQ(count_occurrences(w.html, "<tr class=\"ceiling\">"), run.machine.ceilings.size());
}

// Findings by the time they explain, most first, each leading with that time
// and linking to the charts of its series (a heading of the page), or of its
// sweep for a point outside any series.
TEST(Report, FindingsAreRankedByTheirTimeAndLinkTheirSeries) {
  const Written& w = written();
  const auto found =
      roofline::findings(sample().points, roofline::machine_roofs(sample().run.machine));
  ASSERT_FALSE(found.empty());
  const std::vector<roofline::Series> series =
      roofline::group_series(sample().points, roofline::machine_roofs(sample().run.machine));
  std::size_t last = 0;
  double last_s = found.front().explained_s;
  const std::regex link(R"re(^ <a href="#([^"]+)">its charts</a></li>)re");
  for (const roofline::Finding& f : found) {
    EXPECT_LE(f.explained_s, last_s) << "by absolute time: " << f.text;
    last_s = f.explained_s;
    const std::string item = "<li>" + roofline::format_time(f.explained_s) + " — " +
                             escape(f.text) + " (" + format_number(f.share, hint::share) +
                             " of the series&apos; time)";
    const std::size_t at = w.html.find(item);
    ASSERT_NE(at, std::string::npos) << item;
    EXPECT_GT(at, last) << "ranked: " << f.text;
    last = at;
    std::smatch m;
    const std::string rest = w.html.substr(at + item.size(), 200);
    ASSERT_TRUE(std::regex_search(rest, m, link)) << rest;
    // Its series' own heading (names are unique within a sweep); a point outside
    // any series links to its sweep, whose charts draw it.
    const bool charted = std::any_of(series.begin(), series.end(), [&](const roofline::Series& s) {
      return s.sweep == f.sweep && s.name() == f.series;
    });
    const std::string heading =
        charted ? "<h4 id=\"" + m[1].str() + "\">" + escape(f.series) + " against "
                : "<h3 id=\"" + m[1].str() + "\">Sweep " + escape(f.sweep);
    EXPECT_NE(w.html.find(heading), std::string::npos) << heading;
    const std::string md_item =
        roofline::format_time(f.explained_s) + " — " + detail::markdown_text(f.text);
    const std::size_t md_at = w.markdown.find(md_item);
    ASSERT_NE(md_at, std::string::npos) << md_item;
    const std::string md_line = w.markdown.substr(md_at, w.markdown.find('\n', md_at) - md_at);
    EXPECT_NE(md_line.find(" [its charts](#"), std::string::npos) << md_line;
  }
}

TEST(Report, OneTableRowPerPoint) {
  const Written& w = written();
  EXPECT_EQ(count_occurrences(w.html, "<tr class=\"point\">"), sample().points.size());
  // The failed point carries its reason.
  for (const Point& p : sample().points)
    if (p.status != PointStatus::ok)
      EXPECT_NE(w.html_text.find(escape(p.reason)), std::string::npos) << p.reason;
}

// The times table: one row per analysed point, with T_call, T_stream, T_graph and
// the issue time with their intervals, the measured parts and the class's reason.
TEST(Report, TimesTableShowsTheMeasuredTimesThePartsAndTheClassReason) {
  const Written& w = written();
  std::size_t analysed = 0;
  for (const Point& p : sample().points) analysed += roofline::analysed_status(p.status);
  EXPECT_EQ(count_occurrences(w.html, "<tr class=\"times\">"), analysed);
  for (const char* header : {"<th>T_call</th>", "<th>T_stream</th>", "<th>T_graph</th>",
                             "<th>Issue</th>", "<th>Host overhead</th>", "<th>Device gaps</th>",
                             "<th>Not explained</th>", "<th>Class: why</th>"})
    EXPECT_NE(w.html.find(header), std::string::npos) << header;
  // The first point of the sample (H200, fp16 conv batch 1): T_call 12 us, T_stream
  // 6.0 us, T_graph 5.0 us, issue 6.1 us, each with its interval; host overhead
  // T_stream - T_graph = 1.0 us, device gaps 83 ns, kernels 459 ns within and
  // 4.4 us lost to the roof; launch-bound by the issue rule, both numbers quoted.
  const std::string row =
      "<tr class=\"times\"><td class=\"n\">0</td><td>batch=1 direction=fwd filter=3 filters=64 "
      "stride=2</td><td>12 us +-0.8%</td><td>6.0 us +-1.0%</td><td>5.0 us +-0.0%</td><td>6.1 us "
      "+-1.7%</td><td>1.0 us</td><td>83 ns</td><td>0</td><td>459 ns</td><td>4.4 us</td><td>0</"
      "td><td>the host issues a call in 6.1 us, the GPU runs it in 5.0 us (T_graph)</td></tr>";
  EXPECT_NE(w.html_text.find(row), std::string::npos);
}

TEST(Report, MarkdownChartsAreSvgFilesNextToIt) {
  const Written& w = written();
  const std::regex image(R"(!\[[^\]]*\]\(([^)]+)\))");
  std::set<std::string> files;
  for (auto it = std::sregex_iterator(w.markdown.begin(), w.markdown.end(), image);
       it != std::sregex_iterator(); ++it)
    files.insert((*it)[1].str());
  // Ceilings, working set, one roofline per sweep, one time chart per series.
  EXPECT_GE(files.size(), 6u);
  EXPECT_EQ(files.size(), count_occurrences(w.html, "<figure>"));
  const std::string xmllint = find_on_path("xmllint");
  for (const std::string& file : files) {
    EXPECT_EQ(file.find('/'), std::string::npos) << "relative, next to report.md: " << file;
    EXPECT_EQ(file.substr(file.size() - 4), ".svg") << file;
    const std::string path = w.dir.file(file);
    ASSERT_TRUE(std::filesystem::is_regular_file(path)) << file;
    EXPECT_EQ(read_file(path).rfind("<?xml", 0), 0u) << file;
    if (!xmllint.empty()) EXPECT_EQ(run_process({xmllint, "--noout", path}).exit_code, 0) << file;
  }
}

TEST(Report, NamesWithMarkupSurviveEscaped) {
  RunRecord r = sample();
  const std::string kernel = "void gemm<float, Tile<128, 64>>(Params&) <script>";
  const std::string reason = "cudnn said: a < b && c > d | `code` <b>bold</b>";
  const std::string command = "timeroof run --name '<img src=x>' & echo |pipe|";
  r.run.command_line = command;
  r.run.machine.gpu.name = "GPU <H200> & co";
  Point& failed = r.points.at(0);
  failed.status = PointStatus::failed;
  failed.reason = reason;
  failed.kernels.at(0).name = kernel;
  failed.kernels.at(0).duration_s = 1.0;  // ranks first in the sweep's kernel table
  failed.params["layout"] = "n<h>w&c";
  TempDir dir;
  write_report({r}, dir.path());
  const std::string html = without_breaks(read_file(dir.file("index.html")));
  const std::string md = read_file(dir.file("report.md"));
  for (const std::string& text : {kernel, reason, command, std::string("GPU <H200> & co")}) {
    EXPECT_NE(html.find(escape(text)), std::string::npos) << text;
  }
  EXPECT_NE(html.find("layout=n&lt;h&gt;w&amp;c"), std::string::npos);
  for (const char* raw : {"<script>", "<b>bold", "<img src=x>", "<H200>", "Tile<128"})
    EXPECT_EQ(html.find(raw), std::string::npos) << raw;
  // Markdown: the text as written, a backslash before what would open a tag, a
  // code span or a table column; no entities.
  EXPECT_NE(md.find("a < b && c > d \\| \\`code\\` \\<b>bold\\</b>"), std::string::npos);
  EXPECT_NE(md.find("void gemm\\<float, Tile<128, 64>>(Params&) \\<script>"), std::string::npos);
  EXPECT_EQ(test::unescaped_markup(md), "");
  const std::string xmllint = find_on_path("xmllint");
  if (!xmllint.empty()) {
    const ToolResult xml = run_process({xmllint, "--noout", dir.file("index.html")});
    EXPECT_EQ(xml.exit_code, 0) << xml.err.substr(0, 2000);
  }
}

// report.md reads as the text itself: a backslash before what would open
// markup, nothing else ("series&apos; time" was the HTML escaping).
TEST(ReportMarkdown, TextReadsAsWrittenAndOpensNoMarkup) {
  using detail::markdown_text;
  for (const char* plain : {"the series' time", "hbm_read and T_k", "a < b && c > d = 3 - 2",
                            "\"quoted\" 4 x 8", "fp16_fma (T_mem,l)", "1 us + 2 us"})
    EXPECT_EQ(markdown_text(plain), plain);
  EXPECT_EQ(markdown_text("<b>x</b> <!-- <?p <https://a>"),
            "\\<b>x\\</b> \\<!-- \\<?p \\<https://a>");
  EXPECT_EQ(markdown_text("&amp; &#96; & x;"), "\\&amp; \\&#96; & x;");
  EXPECT_EQ(markdown_text("`code` *em* [l](u) ~s~ a\\b"),
            "\\`code\\` \\*em\\* \\[l\\](u) \\~s\\~ a\\\\b");
  EXPECT_EQ(markdown_text("_init_ __x y_"), "\\_init\\_ \\_\\_x y\\_");
  EXPECT_EQ(markdown_text("# h"), "\\# h");
  EXPECT_EQ(markdown_text("- item"), "\\- item");
  EXPECT_EQ(markdown_text("> quote"), "\\> quote");
  EXPECT_EQ(markdown_text("12. x 3. y"), "12\\. x 3. y");
  for (const char* plain : {"580.159.04 (CUDA 13.0)", "#1", "-1 us", "+-1.0%", "3 - 2"})
    EXPECT_EQ(markdown_text(plain), plain);
  EXPECT_EQ(markdown_text("--- rule"), "\\--- rule");
  EXPECT_EQ(markdown_text("7) x"), "7\\) x");
  EXPECT_EQ(markdown_text("line\nbreak"), "line break");
  EXPECT_EQ(markdown_text("bad \x01 \xff"), "bad \xef\xbf\xbd \xef\xbf\xbd");

  const Written& w = written();
  for (const char* entity : {"&apos;", "&amp;", "&lt;", "&gt;", "&quot;", "&#"})
    EXPECT_EQ(w.markdown.find(entity), std::string::npos) << entity;
  EXPECT_NE(w.markdown.find("series' time"), std::string::npos);
  EXPECT_EQ(test::unescaped_markup(w.markdown), "");
}

// A table cell breaks no identifier in the middle of a word ("hbm_r ead"): the
// CSS keeps words whole, and a long name gets break opportunities between its
// parts only.
TEST(ReportHtml, TableCellsBreakLongNamesBetweenTheirPartsOnly) {
  const std::string kernel =
      "void sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_nhwckrsc<float, 2>(int)";
  const std::vector<detail::Block> doc = {detail::table(
      {"Roof", "Kernel", "Other"},
      {{"hbm_read", kernel, std::string(50, 'a')},
       {"tensor_bf16_mma_sync", "compute_bound(tensor_core)", "direction=bwd_filter"}})};
  const std::string html = detail::render_html(doc);
  EXPECT_NE(html.find("<td>hbm_read</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>tensor_bf16_mma_sync</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>void sm90_<wbr/>xmma_<wbr/>fprop_<wbr/>implicit_<wbr/>gemm_<wbr/>"
                      "f16f16_<wbr/>f16f32_<wbr/>nhwckrsc<wbr/>&lt;float, 2&gt;(int)</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td>compute_bound(<wbr/>tensor_core)</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>direction=<wbr/>bwd_filter</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>" + std::string(24, 'a') + "<wbr/>" + std::string(24, 'a') + "<wbr/>" +
                      std::string(2, 'a') + "</td>"),
            std::string::npos)
      << "a long word without parts breaks every 24 characters";
  const std::size_t css = html.find("th,td{");
  ASSERT_NE(css, std::string::npos);
  const std::string cell_css = html.substr(css, html.find('}', css) - css);
  EXPECT_NE(cell_css.find("overflow-wrap:break-word"), std::string::npos) << cell_css;
  EXPECT_EQ(cell_css.find("anywhere"), std::string::npos) << cell_css;
  // The sample's roofs table: each roof name whole.
  for (const Ceiling& c : sample().run.machine.ceilings)
    EXPECT_NE(written().html.find("<tr class=\"ceiling\"><td>" + c.name + "</td>"),
              std::string::npos)
        << c.name;
}

// The table of contents links every section: in HTML to each h2 and h3 id, in
// Markdown to the anchor GitHub gives each heading.
TEST(Report, TableOfContentsLinksEverySection) {
  const Written& w = written();
  const std::size_t toc = w.html.find("<div class=\"toc\">");
  ASSERT_NE(toc, std::string::npos);
  const std::string links = w.html.substr(toc, w.html.find("</div>", toc) - toc);
  const std::regex section(R"re(<h([23]) id="([^"]+)">)re");
  std::size_t sections = 0;
  for (auto it = std::sregex_iterator(w.html.begin(), w.html.end(), section);
       it != std::sregex_iterator(); ++it, ++sections)
    EXPECT_NE(links.find("href=\"#" + (*it)[2].str() + "\""), std::string::npos) << (*it)[2];
  EXPECT_GE(sections, 8u) << "reading guide, run, summary, findings, roofs, 2 sweeps, provenance";
  EXPECT_LT(toc, w.html.find("id=\"run1\"")) << "at the top";
  for (const char* line :
       {"- [How to read this report](#how-to-read-this-report)\n",
        "- [Run 1: NVIDIA H200, "
        "2026-11-23T20:55:53.321Z](#run-1-nvidia-h200-2026-11-23t205553321z)\n",
        "  - [Sweep conv2d-default](#sweep-conv2d-default)\n", "  - [Findings](#findings)\n"})
    EXPECT_NE(w.markdown.find(line), std::string::npos) << line;
  // GitHub's anchors: lower case, punctuation dropped, repeats numbered.
  const std::vector<detail::Block> doc = {
      detail::heading(2, "Run 1: H200, 2026", "a"), detail::heading(3, "Summary", "b"),
      detail::heading(3, "Summary", "c"), detail::heading(4, "fp16_x (T_k)", "d")};
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"a", "run-1-h200-2026"}, {"b", "summary"}, {"c", "summary-1"}, {"d", "fp16_x-t_k"}};
  EXPECT_EQ(detail::markdown_anchors(doc), expected);
}

// The reading guide explains the time-based roofline on the run's drawn point
// with the largest time, with its numbers from the analysis.
TEST(Report, ReadingGuideReadsTheTimeBasedRooflineOnTheLongestPoint) {
  const Written& w = written();
  const roofline::RunAnalysis analysis = roofline::analyze(sample());
  const roofline::ComplexityPoint* best = nullptr;
  double bandwidth = 0;
  for (const roofline::SweepAnalysis& sa : analysis.sweeps)
    for (const roofline::ComplexityPoint& cp : sa.complexity.points)
      if (cp.drawable && (!best || cp.time_s > best->time_s)) {
        best = &cp;
        bandwidth = sa.complexity.bandwidth;
      }
  ASSERT_NE(best, nullptr);
  const std::size_t guide = w.markdown.find("## How to read this report");
  const std::size_t runs = w.markdown.find("## Run 1");
  ASSERT_LT(guide, runs);
  const std::string text = w.markdown.substr(guide, runs - guide);
  const Point& p = sample().points[best->index];
  const std::string roof_time =
      format_time(std::max(best->flops / best->peak, best->bytes / bandwidth));
  for (const std::string& part :
       {"point #" + std::to_string(p.seq), "T_stream = " + format_time(best->time_s),
        "W = " + format_si(best->flops, "FLOP"), "Q = " + format_si(best->bytes, "B"),
        "The larger, " + roof_time + ", is its roof time",
        std::string(best->compute_side ? "the compute roof bounds it" : "the HBM roof bounds it"),
        "the " + format_time(best->lost_s) + " lost to the roof",
        analysis.points[best->index].classification.label()})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  for (const char* chart : {"Hierarchical roofline:", "Time-based roofline:", "Time against batch:",
                            "Where the time goes:", "Tensor Cores:", "Measured roofs:"})
    EXPECT_NE(text.find(chart), std::string::npos) << chart;
}

// Each of the model's enums is listed whole by its kAll array: the value past
// the array's end is not a value (to_string says "?").
TEST(Glossary, TheModelsListsOfClassesHoldEveryValue) {
  EXPECT_STREQ(
      roofline::to_string(static_cast<roofline::Bottleneck>(roofline::kAllBottlenecks.size())),
      "?");
  EXPECT_STREQ(
      roofline::to_string(static_cast<roofline::ComputeUnit>(roofline::kAllComputeUnits.size())),
      "?");
  EXPECT_STREQ(
      roofline::to_string(static_cast<roofline::ClassRule>(roofline::kAllClassRules.size())), "?");
  EXPECT_STREQ(to_string(static_cast<PrecisionClass>(kAllPrecisionClasses.size())), "?");
  EXPECT_STREQ(to_string(static_cast<Level>(kAllLevels.size())), "?");
  for (std::size_t i = 0; i < roofline::kAllBottlenecks.size(); ++i)
    EXPECT_EQ(static_cast<std::size_t>(roofline::kAllBottlenecks[i]), i);
  for (std::size_t i = 0; i < roofline::kAllClassRules.size(); ++i)
    EXPECT_EQ(static_cast<std::size_t>(roofline::kAllClassRules[i]), i);
}

// Every class label the model can produce, every rule, precision class and
// memory level has a glossary entry, and the report prints them all.
TEST(Glossary, EveryClassAndQuantityTheReportNamesHasAnEntry) {
  const std::vector<roofline::GlossaryEntry> entries = roofline::glossary();
  std::set<std::string> terms;
  for (const roofline::GlossaryEntry& e : entries) {
    EXPECT_TRUE(terms.insert(e.term).second) << "twice: " << e.term;
    EXPECT_FALSE(e.meaning.empty()) << e.term;
  }
  auto has = [&terms](const std::string& term) { return terms.count(term) == 1; };
  // Every combination classify() can set: a level only on memory_bound, a unit
  // only on compute_bound (always one there).
  for (roofline::Bottleneck b : roofline::kAllBottlenecks) {
    roofline::Classification c;
    c.bottleneck = b;
    if (b == roofline::Bottleneck::memory_bound) {
      for (Level l : kAllLevels) {
        c.level = l;
        EXPECT_TRUE(has(c.label())) << c.label();
      }
    } else if (b == roofline::Bottleneck::compute_bound) {
      for (roofline::ComputeUnit u :
           {roofline::ComputeUnit::cuda_core, roofline::ComputeUnit::tensor_core}) {
        c.unit = u;
        EXPECT_TRUE(has(c.label())) << c.label();
      }
    } else {
      EXPECT_TRUE(has(c.label())) << c.label();
    }
  }
  for (roofline::ClassRule r : roofline::kAllClassRules) EXPECT_TRUE(has(roofline::to_string(r)));
  for (PrecisionClass p : kAllPrecisionClasses) EXPECT_TRUE(has(to_string(p))) << to_string(p);
  for (Level l : kAllLevels) EXPECT_TRUE(has(to_string(l))) << to_string(l);
  // The labels of the sample's points, and the quantities its tables head.
  for (const roofline::PointAnalysis& pa : roofline::analyze(sample()).points)
    if (pa.analysed) EXPECT_TRUE(has(pa.classification.label())) << pa.classification.label();
  for (const char* quantity :
       {"T", "T_k", "T_call", "T_stream", "T_graph", "Issue", "Efficiency", "Headroom",
        "Tensor-Core share", "Tensor-Core utilisation", "Host overhead", "Device gaps",
        "Kernels within roof", "Lost to roof", "Not explained", "T_lb", "T_kernel_roof"})
    EXPECT_TRUE(has(quantity)) << quantity;
  const Written& w = written();
  EXPECT_EQ(count_occurrences(w.html, "<tr class=\"glossary\">"), entries.size());
  EXPECT_NE(w.html.find("<h2 id=\"glossary\">Glossary</h2>"), std::string::npos);
  EXPECT_NE(w.markdown.find("\n| memory_bound(l2) | "), std::string::npos);
}

// The bundled sample's report says so at its top, with the sample's GPU, date
// and commit; a report of measured runs has no banner.
TEST(Report, TheBundledSampleCarriesItsBanner) {
  const std::string notice = sample_notice(sample());
  EXPECT_EQ(notice,
            "The bundled sample, not a measurement of this machine: NVIDIA H200, recorded " +
                sample().run.started_at + " by timeroof " + sample().run.tool_version +
                " (commit " + sample().run.git_sha + ").");
  const ReportDocuments d = render_report({sample()}, ChartFormat::svg, notice);
  EXPECT_NE(d.html.find("</h1>\n<p class=\"note\">" + escape(notice) + "</p>"), std::string::npos);
  EXPECT_EQ(d.markdown.rfind("# timeroof report\n\n> " + notice + "\n\n", 0), 0u);
  EXPECT_EQ(written().html.find("class=\"note\""), std::string::npos);
  EXPECT_EQ(written().markdown.find("\n> "), std::string::npos);
}

// The chart files report.md references.
std::set<std::string> chart_files(const std::string& markdown) {
  const std::regex image(R"(!\[[^\]]*\]\(([^)]+)\))");
  std::set<std::string> files;
  for (auto it = std::sregex_iterator(markdown.begin(), markdown.end(), image);
       it != std::sregex_iterator(); ++it)
    files.insert((*it)[1].str());
  return files;
}

// Issue 16: a sweep name over 217 bytes failed the report with "File name too
// long" and left it without index.html.
TEST(Report, LongSweepNamesGiveACompleteReportWithDistinctFiles) {
  const std::string prefix(250, 'p');
  const std::string name300 = prefix + std::string(50, 'a');
  const std::string name5000 = prefix + std::string(4750, 'b');
  RunRecord r = sample();
  std::set<std::string> sweeps;
  for (const Point& p : r.points) sweeps.insert(p.sweep);
  ASSERT_EQ(sweeps.size(), 2u);
  for (Point& p : r.points) p.sweep = p.sweep == *sweeps.begin() ? name300 : name5000;
  TempDir dir;
  write_report({r}, dir.path());
  ASSERT_TRUE(std::filesystem::is_regular_file(dir.file("index.html")));
  const std::string html = read_file(dir.file("index.html"));
  const std::string md = read_file(dir.file("report.md"));
  EXPECT_NE(html.find(">Sweep " + name300 + "</h3>"), std::string::npos) << "the whole name shown";
  EXPECT_NE(html.find(">Sweep " + name5000 + "</h3>"), std::string::npos);
  const std::string part300 = file_name_part(name300);
  const std::string part5000 = file_name_part(name5000);
  EXPECT_NE(part300, part5000);
  std::size_t of300 = 0, of5000 = 0;
  for (const std::string& file : chart_files(md)) {
    EXPECT_LE(file.size(), 160u) << file;
    EXPECT_TRUE(std::filesystem::is_regular_file(dir.file(file))) << file;
    of300 += file.find(part300) != std::string::npos;
    of5000 += file.find(part5000) != std::string::npos;
  }
  EXPECT_GT(of300, 0u);
  EXPECT_GT(of5000, 0u);
}

// Issue 16: U+FFFE or U+FFFF in a name made the SVGs and index.html ill-formed.
TEST(Report, NamesWithCodePointsXmlCannotHoldGiveWellFormedFiles) {
  const std::string hostile = std::string("n\xef\xbf\xbe|\xef\xbf\xbf|\x01|\xff\xc3|\x1b[31m|", 20);
  RunRecord r = sample();
  r.run.command_line = "timeroof sweep " + hostile;
  r.run.host = hostile;
  r.run.machine.gpu.name = "GPU " + hostile;
  for (Point& p : r.points) {
    p.sweep += hostile;
    for (KernelRecord& k : p.kernels) k.name += hostile;
  }
  TempDir dir;
  write_report({r}, dir.path());
  const std::string html = read_file(dir.file("index.html"));
  EXPECT_NE(html.find("GPU n\xef\xbf\xbd|\xef\xbf\xbd|\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"),
            std::string::npos);
  for (const char* raw : {"\xef\xbf\xbe", "\xef\xbf\xbf", "\x01", "\x1b", "\xff"})
    EXPECT_EQ(html.find(raw), std::string::npos) << "raw byte " << int(*raw);
  const std::string xmllint = find_on_path("xmllint");
  if (xmllint.empty()) GTEST_SKIP() << "xmllint not installed (Debian: libxml2-utils)";
  std::set<std::string> files = chart_files(read_file(dir.file("report.md")));
  ASSERT_GE(files.size(), 6u);
  files.insert("index.html");
  for (const std::string& file : files) {
    const ToolResult xml = run_process({xmllint, "--noout", dir.file(file)});
    EXPECT_EQ(xml.exit_code, 0) << file << ": " << xml.err.substr(0, 1000);
  }
}

// A file that cannot be written: the error names it and the system's reason,
// and what was written before is removed (no report without its index.html).
TEST(Report, AFailedWriteLeavesNoHalfWrittenReport) {
  TempDir dir;
  // A directory where the first chart would be staged makes its write fail.
  std::filesystem::create_directories(dir.file("out/.run1-ceilings.svg.partial"));
  try {
    write_report({sample()}, dir.file("out"));
    FAIL() << "no error";
  } catch (const timeroof::Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    const std::string message = e.what();
    EXPECT_NE(message.find(dir.file("out/.run1-ceilings.svg.partial")), std::string::npos)
        << message;
    EXPECT_NE(message.find("Is a directory"), std::string::npos) << message;
    EXPECT_EQ(message.find("writable"), std::string::npos) << "not a permissions problem";
  }
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir.file("out")))
    left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{".run1-ceilings.svg.partial"});
}

TEST(Report, EmptyRunAndNoRunsStillRender) {
  RunRecord bare;
  bare.run.uuid = "bare";
  TempDir dir;
  write_report({bare}, dir.path());
  const std::string html = read_file(dir.file("index.html"));
  EXPECT_NE(html.find(">Provenance</h3>"), std::string::npos);
  EXPECT_NE(html.find("No roofs were measured"), std::string::npos);
  EXPECT_NE(html.find("No findings"), std::string::npos);
  TempDir none;
  write_report({}, none.file("nested/dir"));
  EXPECT_TRUE(std::filesystem::is_regular_file(none.file("nested/dir/index.html")));
  EXPECT_TRUE(std::filesystem::is_regular_file(none.file("nested/dir/report.md")));
}

TEST(Report, UnwritableDirectoryIsAUsageError) {
  TempDir dir;
  std::ofstream(dir.file("file")) << "x";
  try {
    write_report({sample()}, dir.file("file"));
    FAIL() << "no error";
  } catch (const timeroof::Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find(dir.file("file")), std::string::npos) << e.what();
  }
}

TEST(Report, TimeBasedChartsPerSweepAndSeries) {
  const Written& w = written();
  const auto roofs = roofline::machine_roofs(sample().run.machine);
  const std::vector<roofline::Series> series = roofline::group_series(sample().points, roofs);
  std::size_t tensor_series = 0;
  for (const roofline::Series& s : series)
    tensor_series += std::any_of(s.points.begin(), s.points.end(), [](const auto& p) {
      return p.bounds.tensor_share.value_or(0) > 0;
    });
  ASSERT_GT(tensor_series, 0u);
  ASSERT_LT(tensor_series, series.size());
  // One time-based roofline per sweep and compute roof: the sample's points are
  // mostly fp32 (fma_only) or tensor_fp16, in both sweeps.
  for (const char* roof : {"fp32", "tensor_fp16"}) {
    EXPECT_EQ(count_occurrences(w.markdown, std::string("-complexity-") + roof + ".svg)"), 2u)
        << roof;
  }
  EXPECT_EQ(count_occurrences(w.markdown, "-complexity-"), 4u);
  EXPECT_EQ(count_occurrences(w.markdown, "-decomposition.svg)"), series.size())
      << "one per series";
  EXPECT_EQ(count_occurrences(w.markdown, "-tensor.svg)"), tensor_series)
      << "series with Tensor-Core work";
  EXPECT_EQ(count_occurrences(w.html, "Tensor Cores do none of the FLOPs of "),
            series.size() - tensor_series);
  for (const char* title :
       {"Time-based roofline: conv2d-default, points on the fp32 roof (65.9 TFLOP/s)",
        "Time-based roofline: lstm-default, points on the tensor_fp16 roof (816 TFLOP/s)",
        "lstm_inference fp32/fma_only (19 points)", "lstm_backward_weights fp16/tensor (19 points)",
        "conv2d fwd fp16: where the time goes, against batch",
        "conv2d fwd fp16: Tensor Cores against batch"})
    EXPECT_NE(w.html.find(std::string(">") + title + "</text>"), std::string::npos) << title;
  // Each SVG is its own document in the HTML: its <defs> ids must not collide
  // with another chart's (url(#id) resolves to the first in the page).
  const std::regex id(R"( id="([^"]+)\")");
  std::set<std::string> ids;
  for (auto it = std::sregex_iterator(w.html.begin(), w.html.end(), id);
       it != std::sregex_iterator(); ++it) {
    const std::string v = (*it)[1].str();
    if (v.rfind("lost-", 0) == 0 || v.rfind("complexity-", 0) == 0)
      EXPECT_TRUE(ids.insert(v).second) << "duplicate id " << v;
  }
  EXPECT_FALSE(ids.empty());
}

// The sample's first sweep only: fewer charts to convert.
RunRecord small_sample() {
  RunRecord r = sample();
  const std::string first = r.points.front().sweep;
  r.points.erase(std::remove_if(r.points.begin(), r.points.end(),
                                [&](const Point& p) { return p.sweep != first; }),
                 r.points.end());
  r.points.resize(std::min<std::size_t>(r.points.size(), 40));
  return r;
}

// A sweep that copied its inputs from pageable memory is bounded by the pageable
// roof and the report says which; without that roof it says so, and does not
// quietly use the pinned one.
TEST(Report, TransferRoofOfTheSweepsHostMemoryIsNamed) {
  RunRecord r = small_sample();
  for (Point& p : r.points) {
    p.timing.h2d_bytes = 64e6;
    p.timing.d2h_bytes = 0;
    p.details["transfer"] = {{"mode", "h2d_input"}, {"host", "pageable"}};
  }
  TempDir dir;
  write_report({r}, dir.path());
  const std::string html = read_file(dir.file("index.html"));
  // The sample's H200 pageable H2D roof: 8.46 GB/s (pinned: 55.3).
  EXPECT_NE(html.find("T_xfer on the pageable H2D roof 8.46 GB/s"), std::string::npos);
  EXPECT_NE(html.find("transfer (pageable roofs)"), std::string::npos) << "time chart's line";
  EXPECT_EQ(html.find("pinned H2D roof"), std::string::npos);

  auto& ceilings = r.run.machine.ceilings;
  ceilings.erase(std::remove_if(ceilings.begin(), ceilings.end(),
                                [](const Ceiling& c) { return c.name == "h2d_pageable"; }),
                 ceilings.end());
  TempDir missing;
  write_report({r}, missing.path());
  const std::string without = read_file(missing.file("index.html"));
  EXPECT_NE(without.find("no pageable H2D roof, those copies are left out of T_xfer"),
            std::string::npos);
  EXPECT_EQ(without.find("T_xfer on the"), std::string::npos);
}

// The files report.md references as images.
std::vector<std::string> images(const std::string& markdown) {
  const std::regex image(R"(!\[[^\]]*\]\(([^)]+)\))");
  std::vector<std::string> files;
  for (auto it = std::sregex_iterator(markdown.begin(), markdown.end(), image);
       it != std::sregex_iterator(); ++it)
    files.push_back((*it)[1].str());
  return files;
}

TEST(Report, PngAndPdfChartsAreConvertedAndReferenced) {
  if (find_on_path("rsvg-convert").empty())
    GTEST_SKIP() << "rsvg-convert not installed (apt install librsvg2-bin)";
  for (const auto& [format, magic] :
       {std::pair<ChartFormat, std::string>{ChartFormat::png, "\x89PNG"},
        std::pair<ChartFormat, std::string>{ChartFormat::pdf, "%PDF"}}) {
    TempDir dir;
    write_report({small_sample()}, dir.path(), format);
    const std::string md = read_file(dir.file("report.md"));
    const std::vector<std::string> files = images(md);
    ASSERT_GE(files.size(), 5u);
    const std::string ext = std::string(".") + to_string(format);
    for (const std::string& file : files) {
      ASSERT_EQ(file.substr(file.size() - 4), ext) << file;
      EXPECT_EQ(read_file(dir.file(file)).substr(0, magic.size()), magic) << file;
      // The SVG stays next to it; index.html still inlines SVG.
      const std::string svg = file.substr(0, file.size() - 4) + ".svg";
      EXPECT_EQ(read_file(dir.file(svg)).rfind("<?xml", 0), 0u) << svg;
    }
    EXPECT_EQ(md.find(".svg)"), std::string::npos);
    EXPECT_NE(read_file(dir.file("index.html")).find("<svg"), std::string::npos);
  }
  EXPECT_EQ(parse_chart_format("pdf"), ChartFormat::pdf);
  try {
    parse_chart_format("jpeg");
    FAIL() << "no error";
  } catch (const timeroof::Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("svg, png or pdf"), std::string::npos) << e.what();
  }
}

// The point tables fit an A4 page: Chromium lays the report out at the printable
// width of A4 (186 mm = 703 CSS px; the narrow-width CSS is the print CSS) and a
// script added to a copy of the page reports every table whose narrowest layout
// (min-content: words whole where the CSS keeps them whole) is wider than the body.
TEST(Report, PointTablesFitTheWidthOfAnA4Page) {
  const std::string chromium = chromium_path();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed: no layout check";
  const Written& w = written();
  EXPECT_NE(w.html.find("@media print,(max-width:820px)"), std::string::npos);
  EXPECT_NE(w.html.find("@page{size:A4"), std::string::npos);
  TempDir dir;
  std::string html = w.html;
  const std::string probe =
      "<script>window.addEventListener('load',()=>{const w=document.body.clientWidth;"
      "let wide=0,n=0,widest=0;for(const t of document.querySelectorAll('table')){++n;"
      "t.style.width='min-content';const m=t.scrollWidth;t.style.width='';"
      "widest=Math.max(widest,m);if(m>w)++wide;}"
      "const p=document.createElement('pre');p.id='fit';p.textContent='tables='+n+' wide='+wide+"
      "' body='+w+' widest='+widest+' font='+"
      "getComputedStyle(document.querySelector('td')).fontSize;"
      "document.body.appendChild(p);});</script>";
  html.replace(html.rfind("</body>"), 7, probe + "</body>");
  std::ofstream(dir.file("page.html")) << html;
  const ToolResult r = run_process(
      {chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
       "--disable-background-networking", "--disable-component-update", "--disable-sync",
       "--user-data-dir=" + dir.file("profile"), "--window-size=715,1000",
       "--virtual-time-budget=5000", "--dump-dom", "file://" + dir.file("page.html")});
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  const std::regex fit(R"(tables=(\d+) wide=(\d+) body=(\d+) widest=\d+ font=([0-9.]+)px)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, fit)) << r.out.substr(0, 500) << r.err.substr(0, 2000);
  EXPECT_GT(std::stoi(m[1]), 5);
  EXPECT_EQ(std::stoi(m[2]), 0) << "tables wider than the page: " << m[0];
  EXPECT_LE(std::stoi(m[3]), 715);
  EXPECT_LE(std::stod(m[4]), 10.5) << "small table font at A4 width: " << m[0];
}

// Printed to PDF (what a reviewer attaches), the report stays readable: Chromium
// prints it on A4 pages, and at the printable width (the print CSS's narrow
// layout, as above) every chart fits the page's width and the height of one
// page, so no chart is cut at the right edge or split across a page break
// (figures avoid breaking inside).
void expect_readable_a4_print(const std::string& chromium, const Written& w) {
  TempDir dir;
  const std::vector<std::string> flags = {chromium,
                                          "--headless",
                                          "--no-sandbox",
                                          "--disable-gpu",
                                          "--disable-quic",
                                          "--no-first-run",
                                          "--disable-background-networking",
                                          "--disable-component-update",
                                          "--disable-sync",
                                          "--user-data-dir=" + dir.file("profile")};
  std::vector<std::string> print = flags;
  print.insert(print.end(), {"--no-pdf-header-footer", "--print-to-pdf=" + dir.file("r.pdf"),
                             "file://" + w.dir.file("index.html")});
  const ToolResult printed = run_process(print);
  ASSERT_EQ(printed.exit_code, 0) << printed.err.substr(0, 2000);
  const std::string pdf = read_file(dir.file("r.pdf"));
  ASSERT_EQ(pdf.substr(0, 5), "%PDF-");
  // Pages: one /Type /Page object each, every one A4 (595 x 842 pt).
  const std::regex page(R"(/Type\s*/Page[^s])");
  const auto pages = static_cast<std::size_t>(
      std::distance(std::sregex_iterator(pdf.begin(), pdf.end(), page), std::sregex_iterator()));
  EXPECT_GE(pages, 20u) << "the sample's report is tens of pages";
  const std::regex media(R"(/MediaBox\s*\[\s*0\s+0\s+([0-9.]+)\s+([0-9.]+)\s*\])");
  std::size_t boxes = 0;
  for (auto it = std::sregex_iterator(pdf.begin(), pdf.end(), media); it != std::sregex_iterator();
       ++it, ++boxes) {
    EXPECT_NEAR(std::stod((*it)[1]), 595.3, 1.0);
    EXPECT_NEAR(std::stod((*it)[2]), 841.9, 1.0);
  }
  EXPECT_GE(boxes, 1u);

  // The charts at the printable width: 186 mm wide (the body), 273 mm tall (A4
  // less the @page margins) = 1032 CSS px.
  std::string html = w.html;
  const std::string probe =
      "<script>window.addEventListener('load',()=>{const b=document.body.getBoundingClientRect();"
      "let n=0,wide=0,tall=0,tallest=0;for(const s of document.querySelectorAll('figure svg')){"
      "++n;const r=s.getBoundingClientRect();if(r.right>b.right+0.5||r.left<b.left-0.5)++wide;"
      "if(r.height>1032)++tall;tallest=Math.max(tallest,r.height);}"
      "const p=document.createElement('pre');p.id='fit';p.textContent='figures='+n+' wide='+wide+"
      "' tall='+tall+' tallest='+Math.round(tallest);document.body.appendChild(p);});</script>";
  html.replace(html.rfind("</body>"), 7, probe + "</body>");
  std::ofstream(dir.file("page.html")) << html;
  std::vector<std::string> layout = flags;
  layout.insert(layout.end(), {"--window-size=715,1000", "--virtual-time-budget=5000", "--dump-dom",
                               "file://" + dir.file("page.html")});
  const ToolResult r = run_process(layout);
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  const std::regex fit(R"(figures=(\d+) wide=(\d+) tall=(\d+) tallest=(\d+))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, fit)) << r.err.substr(0, 2000);
  ::testing::Test::RecordProperty("layout", m[0].str() + " pages=" + std::to_string(pages));
  EXPECT_EQ(std::stoul(m[1]), images(w.markdown).size()) << "every chart is a figure";
  EXPECT_EQ(std::stoi(m[2]), 0) << "charts wider than the page: " << m[0];
  EXPECT_EQ(std::stoi(m[3]), 0) << "charts taller than a page: " << m[0];
}

TEST(Report, PrintsToAReadableA4Pdf) {
  const std::string chromium = chromium_path();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed: no print check";
  expect_readable_a4_print(chromium, written());
}

// The sample shown without a GPU reports every operator family's default sweep
// and the resnet50 model table (issue 18), and no roof method fills a page.
TEST(Report, FullSampleShowsEveryFamilyAndTheModel) {
  const Written& w = written_full_sample();
  for (const char* sweep :
       {"conv2d-default", "lstm-default", "gemm-default", "attention-default", "layernorm-default",
        "batchnorm-default", "pool-default", "softmax-default", "pointwise-default"})
    EXPECT_NE(w.markdown.find(sweep), std::string::npos) << sweep;
  EXPECT_NE(w.markdown.find("### Model: resnet50"), std::string::npos);
  EXPECT_NE(w.markdown.find("T_lb (Benanza)"), std::string::npos);
  EXPECT_EQ(count_occurrences(w.markdown, "## Run "), 2u) << "the default run and the model run";
  // l2_read's stored method lists every variant searched (~14,000 characters);
  // the roofs table shows its first clauses and says where the rest is.
  const std::vector<RunRecord>& runs = full_sample();
  const auto l2 =
      std::find_if(runs[0].run.machine.ceilings.begin(), runs[0].run.machine.ceilings.end(),
                   [](const Ceiling& c) { return c.name == "l2_read"; });
  ASSERT_NE(l2, runs[0].run.machine.ceilings.end());
  EXPECT_GT(l2->method.size(), 5000u);
  EXPECT_EQ(w.markdown.find(l2->method), std::string::npos);
  EXPECT_NE(w.markdown.find("characters: the whole method is in the export"), std::string::npos);
}

// The shown sample's families and model table too: their charts and tables fit A4.
TEST(Report, FullSamplePrintsToAReadableA4Pdf) {
  const std::string chromium = chromium_path();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed: no print check";
  expect_readable_a4_print(chromium, written_full_sample());
}

TEST(Report, OpensInHeadlessChromiumAndIsNotBlank) {
  const std::string chromium = chromium_path();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed: no browser screenshot check";
  const Written& w = written();
  TempDir profile;
  const std::string png = profile.file("shot.png");
  const ToolResult r = run_process(
      {chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
       "--disable-background-networking", "--disable-component-update", "--disable-sync",
       "--user-data-dir=" + profile.file("profile"), "--screenshot=" + png,
       "--window-size=1280,2000", "file://" + w.dir.file("index.html")});
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  ASSERT_TRUE(std::filesystem::is_regular_file(png)) << r.err.substr(0, 2000);
  const std::string bytes = read_file(png);
  ASSERT_EQ(bytes.substr(1, 3), "PNG");
  // A blank white 1280x2000 page compresses to a few kB; the report's text and
  // charts cannot.
  EXPECT_GT(bytes.size(), 50000u) << "screenshot looks blank";
}

}  // namespace
}  // namespace timeroof::plots
