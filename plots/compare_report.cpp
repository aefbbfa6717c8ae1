#include "plots/compare_report.hpp"

#include <algorithm>
#include <array>
#include <filesystem>

#include "core/format.hpp"
#include "plots/charts.hpp"
#include "plots/compare_charts.hpp"
#include "plots/report_document.hpp"
#include "timeroof/version.hpp"

namespace timeroof::plots {

using namespace detail;
using roofline::ComparedSide;
using roofline::Comparison;
using roofline::PointComparison;
using roofline::Verdict;

namespace {

std::string or_dash(const std::string& text) {
  return text.empty() ? "-" : text;
}

// "259: 26 worse, 65 same, 168 better".
template <typename Items>
std::string verdict_counts(const Items& items) {
  std::array<int, 3> n{};
  for (const auto& item : items) ++n[static_cast<std::size_t>(item.verdict)];
  return std::to_string(items.size()) + ": " + std::to_string(n[2]) + " worse, " +
         std::to_string(n[1]) + " same, " + std::to_string(n[0]) + " better";
}

void summary_section(std::vector<Block>& doc, const Comparison& c) {
  doc.push_back(heading(2, "Summary", "summary"));
  doc.push_back(
      table({"Item", "Value"},
            {{"Base", c.base_label},
             {"Other", c.other_label},
             {"Threshold", format_number(c.options.threshold, hint::percent_1) +
                               " beyond the 95% interval of the ratio"},
             {"Roofs compared", verdict_counts(c.roofs)},
             {"Points compared", verdict_counts(c.points)},
             {"Series along " + c.options.parameter, std::to_string(c.series.size())},
             {"Points only in base", std::to_string(c.points_only_in_base.size())},
             {"Points only in other", std::to_string(c.points_only_in_other.size())},
             {"Points not timed on a side", std::to_string(c.points_not_timed.size())},
             {"Points measured more than once on a side", std::to_string(c.duplicates.size())},
             {"Worse beyond the noise (exit code 4 when any)", std::to_string(c.worse_count())}},
            "summary"));
}

void provenance_changes_section(std::vector<Block>& doc, const Comparison& c) {
  doc.push_back(heading(2, "What differs in the provenance", "changes"));
  if (c.provenance.empty()) {
    doc.push_back(
        paragraph("Nothing: the same GPU, driver, libraries, clocks, tool version and commit on "
                  "both sides."));
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const roofline::ProvenanceChange& p : c.provenance)
    rows.push_back({p.field, or_dash(p.base), or_dash(p.other)});
  doc.push_back(table({"Field", "Base", "Other"}, std::move(rows), "change"));
}

void findings_section(std::vector<Block>& doc, const Comparison& c) {
  doc.push_back(heading(2, "Findings", "findings"));
  if (c.findings.empty()) {
    doc.push_back(paragraph("No point differs beyond its noise and the threshold."));
    return;
  }
  doc.push_back(paragraph("Where the sides differ, the most time first: per series along " +
                          c.options.parameter +
                          ", the stretch that differs most, then the rest of the "
                          "series; the roof named is the one that bounds both sides there."));
  doc.push_back(list(c.findings, true));
}

void roofs_section(std::vector<Block>& doc, const Comparison& c) {
  doc.push_back(heading(2, "Roofs", "roofs"));
  if (c.roofs.empty()) {
    doc.push_back(paragraph("No roof was measured on both sides."));
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const roofline::RoofComparison& r : c.roofs)
      rows.push_back({r.name, format_si(r.base, r.unit), format_si(r.other, r.unit),
                      roofline::format_ratio(r.ratio), to_string(r.verdict)});
    doc.push_back(table({"Roof", "Base", "Other", "Other/base [95%]", "Verdict"}, std::move(rows),
                        "roof",
                        "Measured roofs; latencies (unit s) are better lower, rates higher. The "
                        "interval is from each roof's spread over its repeats."));
    doc.back().nowrap = {1, 2, 3, 4};
  }
  for (const auto& [title, names] : {std::pair{"Roofs only in base: ", &c.roofs_only_in_base},
                                     std::pair{"Roofs only in other: ", &c.roofs_only_in_other}}) {
    if (names->empty()) continue;
    std::string text = title;
    for (std::size_t i = 0; i < names->size(); ++i) text += (i ? ", " : "") + (*names)[i];
    doc.push_back(paragraph(text + "."));
  }
}

// The samples of the classic roofline (point_sample) of a sweep's matched
// points on one side, from that side's analyses.
std::vector<PointSample> side_samples(const std::vector<const PointComparison*>& points,
                                      const ComparedSide& side, bool base) {
  std::vector<PointSample> out;
  for (const PointComparison* p : points) {
    const roofline::PointRef& ref = base ? p->base_ref : p->other_ref;
    const Point& point = side.runs[ref.run].points[ref.point];
    const roofline::PointAnalysis& analysis = side.analyses[ref.run].points[ref.point];
    const auto& achieved = analysis.bounds.achieved;
    if (point.status != PointStatus::ok || !achieved || !(*achieved > 0)) continue;
    out.push_back(point_sample(point, analysis));
  }
  return out;
}

void sweep_section(std::vector<Block>& doc, const Comparison& c, const ComparedSide& base,
                   const ComparedSide& other, const std::string& sweep, std::size_t number) {
  const SideLabels labels{c.base_label, c.other_label};
  const std::string prefix = "sweep" + std::to_string(number) + "-" + file_name_part(sweep);
  std::vector<const PointComparison*> points;
  for (const PointComparison& p : c.points)
    if (p.sweep == sweep) points.push_back(&p);
  doc.push_back(heading(2, "Sweep " + sweep, prefix));

  const auto base_roofs = roofline::roofs_run(base), other_roofs = roofline::roofs_run(other);
  if (base_roofs && other_roofs) {
    const OverlaySide a{&base.analyses[*base_roofs].roofs, side_samples(points, base, true)};
    const OverlaySide b{&other.analyses[*other_roofs].roofs, side_samples(points, other, false)};
    if (!a.samples.empty() || !b.samples.empty()) {
      const std::string title = "Rooflines of both sides: " + sweep;
      doc.push_back(chart(roofline_overlay_chart(a, b, labels, title), prefix + "-overlay.svg",
                          title + ": each side's roofs and its " +
                              std::to_string(a.samples.size()) + " / " +
                              std::to_string(b.samples.size()) + " measured points"));
    }
  }

  std::vector<RatioSeries> ratios;
  std::vector<std::pair<const roofline::ComparedSeries*, std::vector<ComparedTimes>>> series;
  for (const roofline::ComparedSeries& s : c.series) {
    if (s.sweep != sweep) continue;
    std::vector<ComparedTimes> times = compared_times(c, s, base, other);
    ratios.push_back({s.name(), times});
    series.emplace_back(&s, std::move(times));
  }
  const std::string& parameter = c.options.parameter;
  if (!ratios.empty()) {
    const std::string title = "Other / base against " + parameter + ": " + sweep;
    doc.push_back(chart(ratio_chart(ratios, c.options.threshold, labels, parameter, title),
                        prefix + "-ratio.svg",
                        title + ", per series, with the 95% interval of each ratio and the "
                                "threshold band"));
  }
  std::size_t series_number = 0;
  for (const auto& [s, times] : series) {
    ++series_number;
    const std::string title = s->name() + ": time against " + parameter;
    doc.push_back(heading(3, s->name() + " against " + parameter));
    doc.push_back(chart(compare_time_chart(times, labels, parameter, title),
                        prefix + "-series" + std::to_string(series_number) + ".svg",
                        title + " on both sides (" + params_text(s->fixed) +
                            "): T with its 95% interval, T_roof dashed"));
  }

  const std::vector<std::string> keys = roofline::varying_params(points);
  std::vector<std::vector<std::string>> rows;
  for (const PointComparison* p : points)
    rows.push_back({std::to_string(p->base_seq),
                    p->op + " " + p->precision + (p->math_mode.empty() ? "" : "/" + p->math_mode),
                    or_dash(params_text(p->params, keys)),
                    format_number(p->base_time_s, hint::time_3),
                    format_number(p->other_time_s, hint::time_3), roofline::format_ratio(p->ratio),
                    to_string(p->verdict), p->base_class, p->other_class});
  doc.push_back(table({"#", "Operator", "Parameters", "T base", "T other", "Other/base [95%]",
                       "Verdict", "Class base", "Class other"},
                      std::move(rows), "point",
                      "Matched points of " + sweep +
                          " (# is the base side's); T is T_stream "
                          "where measured, else T_call."));
  doc.back().nowrap = {0, 3, 4, 5, 6};
}

void unmatched_section(std::vector<Block>& doc, const Comparison& c) {
  if (c.points_only_in_base.empty() && c.points_only_in_other.empty() &&
      c.points_not_timed.empty() && c.duplicates.empty())
    return;
  doc.push_back(heading(2, "Points not compared, and points measured twice", "unmatched"));
  for (const auto& [title, names] :
       {std::pair{"Only in base:", &c.points_only_in_base},
        std::pair{"Only in other:", &c.points_only_in_other},
        std::pair{"Not timed on a side (failed, unsupported, out of memory):",
                  &c.points_not_timed}}) {
    if (names->empty()) continue;
    doc.push_back(paragraph(title));
    doc.push_back(list(*names, false));
  }
  if (c.duplicates.empty()) return;
  doc.push_back(
      paragraph("Measured more than once on one side: each is compared once, with its newest "
                "measurement the model could time."));
  std::vector<std::vector<std::string>> rows;
  for (const roofline::DuplicatePoint& d : c.duplicates) {
    std::string measured;
    for (std::size_t i = 0; i < d.measured_in.size(); ++i)
      measured += (i ? "; " : "") + d.measured_in[i];
    rows.push_back({d.side, d.point, measured, d.kept});
  }
  doc.push_back(
      table({"Side", "Point", "Measured in (oldest first)", "Compared"}, std::move(rows), "dup"));
}

// Both sides' provenance, row by row: the run whose roofs each side is judged on.
void provenance_section(std::vector<Block>& doc, const ComparedSide& base,
                        const ComparedSide& other) {
  const auto a = roofline::roofs_run(base), b = roofline::roofs_run(other);
  if (!a || !b) return;
  const Run& x = base.runs[*a].run;
  const Run& y = other.runs[*b].run;
  auto gpu = [](const GpuInfo& g) {
    return or_dash(g.name) + " (chip " + or_dash(g.chip) + ", " + std::to_string(g.sm_count) +
           " SMs)";
  };
  auto clocks = [](const GpuInfo& g) {
    return "SM " + format_si(g.sm_clock_max_hz, "Hz") + ", memory " +
           format_si(g.mem_clock_max_hz, "Hz");
  };
  auto runs = [](const ComparedSide& side) {
    std::string text;
    for (const RunRecord& r : side.runs)
      text += (text.empty() ? "" : "; ") +
              (r.run.id ? "run " + std::to_string(r.run.id) + " " : "") + or_dash(r.run.uuid) +
              " (" + std::to_string(r.points.size()) + " points)";
    return text;
  };
  const GpuInfo& g = x.machine.gpu;
  const GpuInfo& h = y.machine.gpu;
  doc.push_back(heading(2, "Provenance", "provenance"));
  doc.push_back(
      table({"Item", "Base", "Other"},
            {{"GPU", gpu(g), gpu(h)},
             {"Driver", or_dash(g.versions.driver), or_dash(h.versions.driver)},
             {"CUDA runtime", or_dash(g.versions.cuda_runtime), or_dash(h.versions.cuda_runtime)},
             {"cuDNN", or_dash(g.versions.cudnn), or_dash(h.versions.cudnn)},
             {"cuBLAS", or_dash(g.versions.cublas), or_dash(h.versions.cublas)},
             {"CUPTI", or_dash(g.versions.cupti), or_dash(h.versions.cupti)},
             {"Maximum clocks", clocks(g), clocks(h)},
             {"Host", or_dash(x.host), or_dash(y.host)},
             {"Started", or_dash(x.started_at), or_dash(y.started_at)},
             {"Tool", "timeroof " + or_dash(x.tool_version) + " (" + or_dash(x.git_sha) + ")",
              "timeroof " + or_dash(y.tool_version) + " (" + or_dash(y.git_sha) + ")"},
             {"Command line", or_dash(x.command_line), or_dash(y.command_line)},
             {"Runs", runs(base), runs(other)}},
            "provenance"));
}

std::vector<Block> compare_blocks(const Comparison& c, const ComparedSide& base,
                                  const ComparedSide& other) {
  std::vector<Block> doc;
  doc.push_back(heading(1, "timeroof compare: " + c.other_label + " against " + c.base_label));
  doc.push_back(paragraph(
      "Ratios are other / base with their 95% intervals, from each side's own statistics. A "
      "verdict is better or worse only where the whole interval lies beyond the threshold, so "
      "noise alone never makes one. Times are T, the time the model explains: T_stream where "
      "measured, else T_call. Written by timeroof " +
      std::string(kToolVersion) + " (" + kGitSha + ") at " + utc_now_iso8601() + "."));
  summary_section(doc, c);
  provenance_changes_section(doc, c);
  findings_section(doc, c);
  roofs_section(doc, c);
  std::vector<std::string> sweeps;  // in the order of their first matched point
  for (const PointComparison& p : c.points)
    if (std::find(sweeps.begin(), sweeps.end(), p.sweep) == sweeps.end()) sweeps.push_back(p.sweep);
  for (std::size_t i = 0; i < sweeps.size(); ++i)
    sweep_section(doc, c, base, other, sweeps[i], i + 1);
  unmatched_section(doc, c);
  provenance_section(doc, base, other);
  return doc;
}

}  // namespace

const char* to_string(CompareReportFormat format) {
  return format == CompareReportFormat::html ? "html" : "markdown";
}

CompareReport render_compare_report(const Comparison& comparison, const ComparedSide& base,
                                    const ComparedSide& other) {
  const std::vector<Block> doc = compare_blocks(comparison, base, other);
  CompareReport out;
  out.html = render_html(doc);
  out.markdown = render_markdown(doc, ChartFormat::svg);
  for (const Block& b : doc)
    if (b.kind == Block::Kind::chart) out.charts.emplace_back(b.file, b.svg);
  return out;
}

std::string write_compare_report(const Comparison& comparison, const ComparedSide& base,
                                 const ComparedSide& other, const std::string& out_dir,
                                 CompareReportFormat format) {
  CompareReport report = render_compare_report(comparison, base, other);
  std::vector<std::pair<std::string, std::string>> files;
  std::string main_file;
  if (format == CompareReportFormat::html) {
    main_file = "index.html";
    files.emplace_back(main_file, std::move(report.html));
  } else {
    main_file = "report.md";
    files = std::move(report.charts);
    files.emplace_back(main_file, std::move(report.markdown));
  }
  write_report_files(out_dir, files);
  return (std::filesystem::path(out_dir) / main_file).string();
}

}  // namespace timeroof::plots
