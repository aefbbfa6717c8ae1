// One point's numbers agree across every output (as google/benchmark's output
// tests check its console, JSON and CSV reporters against each other): the
// bundled H200 sample through `timeroof analyze` as a table, CSV and JSON, and
// through `timeroof report` as HTML and Markdown. Each output is parsed back and
// the same quantities of one point compared: JSON and CSV to ten significant
// digits; the table, HTML and Markdown within the rounding of what they print;
// the table and the report print each quantity with the same text (one hint
// per quantity, core/format.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

using test::read_file;
using test::run_tool;
using test::TempDir;

constexpr const char* kSweep = "conv2d-default";
constexpr std::int64_t kSeq = 54;  // conv2d_fwd fp32, batch 1: latency-bound, no Tensor Cores

struct Outputs {
  nlohmann::json json;
  std::string csv, table, html, markdown;
};

const Outputs& outputs() {
  static const Outputs out = [] {
    TempDir dir;
    const std::string sample = test::source_dir() + "/samples/sample-run.json.gz";
    Outputs o;
    for (const char* format : {"json", "csv", "table"}) {
      const std::string file = dir.file(std::string("analysis.") + format);
      const test::ToolResult r =
          run_tool({"analyze", "--from", sample, "--format", format, "--out", file});
      EXPECT_EQ(r.exit_code, 0) << r.err;
      const std::string text = read_file(file);
      if (std::string(format) == "json") o.json = nlohmann::json::parse(text);
      if (std::string(format) == "csv") o.csv = text;
      if (std::string(format) == "table") o.table = text;
    }
    const test::ToolResult r = run_tool({"report", "--from", sample, "--out", dir.file("report")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    o.html = read_file(dir.file("report/index.html"));
    o.markdown = read_file(dir.file("report/report.md"));
    return o;
  }();
  return out;
}

// ---- Parsing each output back ---------------------------------------------------------

// A printed quantity: "178 ns", "29 us", "1.2 ms", "15%", "0.4%", "6.59x", "0", "4"; its
// value in base units (seconds, fractions) and half the unit of its last digit.
struct Printed {
  double value = 0;
  double tolerance = 0;
};
Printed printed(const std::string& text) {
  static const std::regex kNumber(R"(^(-?[0-9]+)(\.([0-9]+))?\s*(ns|us|ms|s|%|x)?$)");
  std::smatch m;
  EXPECT_TRUE(std::regex_match(text, m, kNumber)) << "'" << text << "'";
  if (m.empty()) return {std::nan(""), 0};
  const std::string unit = m[4];
  const double scale = unit == "ns"   ? 1e-9
                       : unit == "us" ? 1e-6
                       : unit == "ms" ? 1e-3
                       : unit == "%"  ? 1e-2
                                      : 1;
  const int decimals = static_cast<int>(m[3].length());
  return {std::stod(m[1].str() + m[2].str()) * scale, 0.5 * std::pow(10.0, -decimals) * scale};
}
void expect_printed(const std::string& where, const std::string& text, double exact) {
  const Printed p = printed(text);
  EXPECT_NEAR(p.value, exact, p.tolerance * (1 + 1e-9)) << where << ": '" << text << "'";
}

// The point in the JSON document.
const nlohmann::json& json_point() {
  for (const nlohmann::json& p : outputs().json.at("runs").at(0).at("points"))
    if (p.at("sweep") == kSweep && p.at("seq") == kSeq) return p;
  ADD_FAILURE() << "no point " << kSeq << " of " << kSweep << " in the JSON";
  static const nlohmann::json none;
  return none;
}

// A CSV line's fields (RFC 4180 quotes).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// The point's CSV row, by column name.
std::map<std::string, std::string> csv_point() {
  std::istringstream in(outputs().csv);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = csv_fields(line);
  while (std::getline(in, line)) {
    const std::vector<std::string> fields = csv_fields(line);
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size() && i < fields.size(); ++i) row[header[i]] = fields[i];
    if (row["sweep"] == kSweep && row["seq"] == std::to_string(kSeq)) return row;
  }
  ADD_FAILURE() << "no point in the CSV";
  return {};
}

// Cells of a text-table line: separated by two spaces or more.
std::vector<std::string> table_cells(const std::string& line) {
  std::vector<std::string> out;
  static const std::regex kGap(R"(\s{2,})");
  const std::string trimmed = std::regex_replace(line, std::regex(R"(^\s+|\s+$)"), "");
  for (std::sregex_token_iterator it(trimmed.begin(), trimmed.end(), kGap, -1), end; it != end;
       ++it)
    out.push_back(*it);
  return out;
}

// The point's row of a console table whose header starts with `first_column`,
// in the section that starts with `section`, by column name.
std::map<std::string, std::string> table_point(const std::string& section,
                                               const std::string& first_column) {
  const std::string& text = outputs().table;
  std::istringstream in(text.substr(text.find(section)));
  std::string line;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = table_cells(line);
    if (cells.empty()) continue;
    if (header.empty() && cells.front() == first_column) header = cells;
    if (!header.empty() && cells.front() == std::to_string(kSeq)) {
      EXPECT_EQ(cells.size(), header.size()) << line;
      std::map<std::string, std::string> row;
      for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
      return row;
    }
  }
  ADD_FAILURE() << "no point in the table after '" << section << "'";
  return {};
}

// The cells of the first HTML row of class `row_class` for the point after `anchor`.
std::vector<std::string> html_row(const std::string& anchor, const std::string& row_class) {
  const std::string& html = outputs().html;
  const std::size_t from = html.find(anchor);
  const std::string start =
      "<tr class=\"" + row_class + "\"><td class=\"n\">" + std::to_string(kSeq) + "</td>";
  const std::size_t at = html.find(start, from);
  if (from == std::string::npos || at == std::string::npos) {
    ADD_FAILURE() << "no " << row_class << " row in the HTML";
    return {};
  }
  // Without the break opportunities long words get in table cells.
  const std::string row =
      std::regex_replace(html.substr(at, html.find("</tr>", at) - at), std::regex("<wbr/>"), "");
  std::vector<std::string> cells;
  static const std::regex kCell(R"(<td[^>]*>([^<]*)</td>)");
  for (std::sregex_iterator it(row.begin(), row.end(), kCell), end; it != end; ++it)
    cells.push_back((*it)[1]);
  return cells;
}

// The cells of the first Markdown table row of the point after `heading`.
std::vector<std::string> markdown_row(const std::string& heading) {
  const std::string& md = outputs().markdown;
  const std::size_t at = md.find("\n| " + std::to_string(kSeq) + " |", md.find(heading));
  if (at == std::string::npos) {
    ADD_FAILURE() << "no row in the Markdown";
    return {};
  }
  const std::string line = md.substr(at + 1, md.find('\n', at + 1) - at - 1);
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|' && line[i - 1] != '\\') {
      cells.push_back(std::regex_replace(cell, std::regex(R"(^\s+|\s+$)"), ""));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

// ---- The comparisons ------------------------------------------------------------------

double json_number(const char* key) {
  return json_point().at(key).get<double>();
}

TEST(OutputAgreement, JsonAndCsvCarryTheSameNumbers) {
  const nlohmann::json& j = json_point();
  std::map<std::string, std::string> csv = csv_point();
  ASSERT_FALSE(csv.empty());
  for (const char* key :
       {"time_s", "kernel_s", "t_roof_s", "t_kernel_roof_s", "t_compute_s", "t_cuda_s",
        "t_tensor_s", "t_xfer_s", "efficiency", "tensor_share", "headroom", "kernel_headroom"}) {
    const double exact = j.at(key).get<double>();
    EXPECT_NEAR(std::stod(csv.at(key)), exact, 1e-9 * std::fabs(exact)) << key;
  }
  EXPECT_NEAR(std::stod(csv.at("t_lower_bound_s")), j.at("lower_bound").at("t_s").get<double>(),
              1e-9 * j.at("lower_bound").at("t_s").get<double>());
  EXPECT_NEAR(std::stod(csv.at("t_dram_s")), j.at("levels").at("dram").at("time_s").get<double>(),
              1e-9 * j.at("levels").at("dram").at("time_s").get<double>());
  EXPECT_NEAR(std::stod(csv.at("call_s")), j.at("times").at("call").at("median_s").get<double>(),
              1e-9 * j.at("times").at("call").at("median_s").get<double>());
  EXPECT_EQ(csv.at("launches"), std::to_string(j.at("launches").get<std::int64_t>()));
  EXPECT_EQ(csv.at("class"), j.at("class").at("label"));
  EXPECT_EQ(csv.at("limiting_roof"), j.at("limiting_roof"));
  EXPECT_EQ(csv.at("time_source"), j.at("time_source"));
}

TEST(OutputAgreement, TheTableShowsTheJsonNumbers) {
  std::map<std::string, std::string> row = table_point(std::string("sweep ") + kSweep + ":", "seq");
  ASSERT_FALSE(row.empty());
  const nlohmann::json& j = json_point();
  expect_printed("table T", row.at("T"), json_number("time_s"));
  expect_printed("table T_k", row.at("T_k"), json_number("kernel_s"));
  expect_printed("table T_roof", row.at("T_roof"), json_number("t_roof_s"));
  expect_printed("table T_cuda", row.at("T_cuda"), json_number("t_cuda_s"));
  expect_printed("table T_HBM", row.at("T_HBM"),
                 j.at("levels").at("dram").at("time_s").get<double>());
  expect_printed("table T_lb", row.at("T_lb"), j.at("lower_bound").at("t_s").get<double>());
  expect_printed("table eff", row.at("eff"), json_number("efficiency"));
  expect_printed("table TC", row.at("TC"), json_number("tensor_share"));
  expect_printed("table headroom", row.at("headroom"), json_number("headroom"));
  EXPECT_EQ(row.at("class"), j.at("class").at("label"));
  EXPECT_EQ(row.at("limit"), j.at("limiting_roof"));

  std::map<std::string, std::string> times =
      table_point(std::string("times of sweep ") + kSweep, "seq");
  ASSERT_FALSE(times.empty());
  const std::string call = times.at("T_call");
  expect_printed("table T_call", call.substr(0, call.find(" +-")),
                 j.at("times").at("call").at("median_s").get<double>());
  expect_printed("table host", times.at("host"),
                 j.at("decomposition").at("host_overhead_s").get<double>());
  expect_printed("table lost", times.at("lost"),
                 j.at("decomposition").at("lost_to_roof_s").get<double>());
}

TEST(OutputAgreement, HtmlAndMarkdownShowTheJsonNumbersAsTheTableDoes) {
  const std::string anchor = std::string("id=\"run1-sweep1-") + kSweep + "\"";
  const std::vector<std::string> html = html_row(anchor, "point");
  const std::vector<std::string> md = markdown_row(std::string("### Sweep ") + kSweep);
  // #, Operator, Parameters, Time T, Kernel time, Launches, Bound, Efficiency,
  // Tensor-Core share, Headroom, Status.
  ASSERT_EQ(html.size(), 11u);
  EXPECT_EQ(md, html) << "the Markdown row is the HTML row";
  const nlohmann::json& j = json_point();
  expect_printed("HTML time", html[3], json_number("time_s"));
  expect_printed("HTML kernel time", html[4], json_number("kernel_s"));
  EXPECT_EQ(html[5], std::to_string(j.at("launches").get<std::int64_t>()));
  EXPECT_EQ(html[6], j.at("class").at("label"));
  expect_printed("HTML efficiency", html[7], json_number("efficiency"));
  expect_printed("HTML Tensor-Core share", html[8], json_number("tensor_share"));
  expect_printed("HTML headroom", html[9], json_number("headroom"));
  // The quantities both print with one hint read the same: the point's Tensor-Core
  // share is 0, "0%" in every printer (the report said "0.0%" with a hint of its own).
  std::map<std::string, std::string> row = table_point(std::string("sweep ") + kSweep + ":", "seq");
  EXPECT_EQ(html[3], row.at("T"));
  EXPECT_EQ(html[4], row.at("T_k"));
  EXPECT_EQ(html[7], row.at("eff"));
  EXPECT_EQ(html[8], row.at("TC"));
  EXPECT_EQ(html[8], "0%");
  EXPECT_EQ(html[9], row.at("headroom"));

  const std::vector<std::string> times = html_row(anchor, "times");
  // #, Parameters, T_call, T_stream, T_graph, Issue, Host overhead, Device gaps,
  // Transfer, Kernels within roof, Lost to roof, Not explained, Class: why.
  ASSERT_EQ(times.size(), 13u);
  std::map<std::string, std::string> table_times =
      table_point(std::string("times of sweep ") + kSweep, "seq");
  EXPECT_EQ(times[2], table_times.at("T_call"));
  EXPECT_EQ(times[3], table_times.at("T_stream"));
  EXPECT_EQ(times[4], table_times.at("T_graph"));
  EXPECT_EQ(times[10], table_times.at("lost"));
  expect_printed("HTML lost to roof", times[10],
                 j.at("decomposition").at("lost_to_roof_s").get<double>());
  EXPECT_EQ(times[12], j.at("class").at("reason"));
}

// The machine's flagged roofs (above their peak, or spread) read the same in the
// JSON, the console table, the HTML and the Markdown report.
TEST(OutputAgreement, RoofFindingsArePrintedByEveryConsumer) {
  const Outputs& o = outputs();
  const nlohmann::json& found = o.json.at("runs").at(0).at("roof_findings");
  ASSERT_EQ(found.size(), 6u) << "the H200 sample: six roofs spread > 10%, none above its peak";
  EXPECT_NE(o.table.find("roofs flagged (machine-level):"), std::string::npos);
  for (const nlohmann::json& f : found) {
    const std::string text = f.at("text").get<std::string>();
    EXPECT_NE(o.table.find("[" + f.at("label").get<std::string>() + "] " + text), std::string::npos)
        << text;
    EXPECT_NE(o.html.find("Spread: " + text), std::string::npos) << text;
    EXPECT_NE(o.markdown.find("Spread: " + text), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace timeroof
