// The report of one or more runs, for a performance review: a self-contained
// index.html (inline SVG and CSS, nothing fetched from the network, no
// JavaScript) and a report.md with the same content, its charts written as SVG
// files next to it and referenced by relative paths.
//
// Sections per run, all from one roofline::analyze of the run (points, series,
// fits and findings computed once): summary (GPU, date, tool version, command
// line, points per status), findings (ranked by the seconds they explain), the
// machine's roofs (ceilings and working-set charts, a table of every ceiling),
// per sweep the classic roofline chart of its points and its time-based
// complexity chart; per batch series the time-vs-parameter chart (T_call,
// T_stream, T_graph with their 95% intervals), the decomposition of each call's
// time into measured parts and, where Tensor Cores do work, their share and
// utilisation; a table with one row per point, and one per analysed point of its
// measured times, the parts of T and the reason for its class; and provenance.
// Every piece of text taken from the data (kernel and operator names, params,
// reasons, command lines) is escaped: XML entities in HTML (table cells break
// long identifiers between their parts only); in Markdown, a backslash before
// each character that would open markup, so report.md reads as plain text.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/results.hpp"

namespace timeroof::plots {

// The chart files report.md references. index.html always inlines SVG.
enum class ChartFormat { svg, png, pdf };
const char* to_string(ChartFormat format);  // "svg", "png", "pdf": also the file extension
// "svg", "png" or "pdf"; anything else is a usage error naming the choices.
ChartFormat parse_chart_format(const std::string& name);

// Writes out_dir/index.html, out_dir/report.md and the SVG charts (out_dir is
// created), all or none: when a file cannot be written, those written are
// removed and a usage error names the path, the system's reason and the fix.
// Chart file names are made from sweep names by file_name_part (core/format).
// With png or pdf, each chart's SVG is then converted by rsvg-convert (found on
// PATH; PNG at 2x, for slides) and report.md is rewritten to reference the
// converted files. When rsvg-convert is not installed or fails, the SVG report
// stays written (report.md referencing the SVGs) and an environment error names
// the problem and the fix.
// `notice`, when given, is a banner at the top of both documents (the bundled
// sample shown where there is no GPU: sample_notice).
// Returns the names of the files written, relative to out_dir: the charts, their
// PNG or PDF copies, report.md and index.html.
std::vector<std::string> write_report(const std::vector<RunRecord>& runs,
                                      const std::string& out_dir,
                                      ChartFormat format = ChartFormat::svg,
                                      const std::string& notice = {});

// What a report of the bundled sample says it is: "The bundled sample, not a
// measurement of this machine: NVIDIA H200, recorded 2026-11-23T20:55:53.321Z
// by timeroof 0.1.0 (commit 7a22a50da76c)."
std::string sample_notice(const RunRecord& sample);

// The two documents without writing anything (for tests): HTML, and Markdown
// referencing its charts as `format` files; the charts as (relative SVG file
// name, SVG text).
struct ReportDocuments {
  std::string html;
  std::string markdown;
  std::vector<std::pair<std::string, std::string>> charts;
};
ReportDocuments render_report(const std::vector<RunRecord>& runs,
                              ChartFormat format = ChartFormat::svg,
                              const std::string& notice = {});

}  // namespace timeroof::plots
