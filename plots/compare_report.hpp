// The compare report (issue 19): what `timeroof compare BASE OTHER --format
// html|markdown --out DIR` writes, for a performance review of an upgrade or of
// one GPU against another. The same document model and renderers as the run
// report (report_document.hpp), so the HTML is as self-contained (inline SVG and
// CSS, no script, nothing fetched) and every name from the data is escaped.
//
// Sections: a summary of the verdicts; what differs in the provenance; the
// findings (per series, over ranges of the swept parameter); every roof on both
// sides with its ratio, interval and verdict; per sweep the roofline overlay of
// both sides, the ratio chart of its series, per series both sides' times against
// the parameter, and a table of its matched points; the points on one side only,
// not timed, or measured more than once (and which measurement was compared);
// and both sides' provenance side by side. All from the comparison and the two
// sides' analyses (roofline/compare.hpp): nothing is analysed again.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "roofline/compare.hpp"

namespace timeroof::plots {

enum class CompareReportFormat { html, markdown };
const char* to_string(CompareReportFormat format);  // "html", "markdown"

struct CompareReport {
  std::string html;      // one page, charts inline
  std::string markdown;  // its charts referenced as the files below, next to it
  std::vector<std::pair<std::string, std::string>> charts;  // (file name, SVG text)
};
CompareReport render_compare_report(const roofline::Comparison& comparison,
                                    const roofline::ComparedSide& base,
                                    const roofline::ComparedSide& other);

// Writes out_dir/index.html (html) or out_dir/report.md and its SVG charts
// (markdown), creating out_dir, all or none (a usage error names what could not
// be written and why). Returns the path of index.html or report.md.
std::string write_compare_report(const roofline::Comparison& comparison,
                                 const roofline::ComparedSide& base,
                                 const roofline::ComparedSide& other, const std::string& out_dir,
                                 CompareReportFormat format);

}  // namespace timeroof::plots
