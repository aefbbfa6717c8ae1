// The report of one or more runs, for a performance review: a self-contained
// index.html (inline SVG and CSS, nothing fetched from the network, no
// JavaScript) and a report.md with the same content, its charts written as SVG
// files next to it and referenced by relative paths.
//
// Sections per run: summary (GPU, date, tool version, command line, points per
// status), findings (roofline::findings, ranked), the machine's roofs (ceilings
// and working-set charts, a table of every ceiling), per sweep the classic
// roofline chart of its points, the time-vs-parameter chart of each batch series
// (roofline::group_series) and a table with one row per point, and provenance.
// Every piece of text taken from the data (kernel and operator names, params,
// reasons, command lines) is escaped: XML entities in HTML; in Markdown too
// (renderers pass HTML through), plus | and backticks.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/results.hpp"

namespace timeroof::plots {

// Writes out_dir/index.html, out_dir/report.md and the SVG charts report.md
// names (out_dir is created). Throws a usage error naming the path when a file
// cannot be written.
void write_report(const std::vector<RunRecord>& runs, const std::string& out_dir);

// The two documents without writing anything (for tests): HTML, and Markdown
// with the charts it references as (relative file name, SVG text).
struct ReportDocuments {
  std::string html;
  std::string markdown;
  std::vector<std::pair<std::string, std::string>> charts;
};
ReportDocuments render_report(const std::vector<RunRecord>& runs);

}  // namespace timeroof::plots
