#include "plots/report.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/format.hpp"
#include "plots/charts.hpp"
#include "plots/svg.hpp"
#include "roofline/analysis.hpp"
#include "roofline/bounds.hpp"
#include "roofline/charts_data.hpp"
#include "roofline/classify.hpp"
#include "roofline/findings.hpp"
#include "roofline/machine_roofs.hpp"
#include "roofline/sweep_fit.hpp"
#include "timeroof/version.hpp"

namespace timeroof::plots {

namespace {

// ---- A small document model, rendered twice (HTML and Markdown) ----------------

struct Block {
  enum class Kind { heading, paragraph, list, table, chart } kind = Kind::paragraph;
  int level = 2;                   // heading
  std::string id;                  // heading anchor
  std::string text;                // heading, paragraph (plain text, escaped when rendered)
  std::vector<std::string> items;  // list
  bool ordered = false;
  std::vector<std::string> header;  // table
  std::vector<std::vector<std::string>> rows;
  std::string row_class;            // table: class of every body row
  std::vector<std::size_t> nowrap;  // table: columns never wrapped (numbers, short labels)
  std::vector<std::size_t> words;   // table: columns wrapped between words only
  std::string caption;              // table, chart
  std::string svg;                  // chart
  std::string file;                 // chart: file name next to report.md
};

Block heading(int level, const std::string& text, const std::string& id = {}) {
  Block b;
  b.kind = Block::Kind::heading;
  b.level = level;
  b.text = text;
  b.id = id;
  return b;
}
Block paragraph(const std::string& text) {
  Block b;
  b.kind = Block::Kind::paragraph;
  b.text = text;
  return b;
}
Block list(std::vector<std::string> items, bool ordered) {
  Block b;
  b.kind = Block::Kind::list;
  b.items = std::move(items);
  b.ordered = ordered;
  return b;
}
Block table(std::vector<std::string> header, std::vector<std::vector<std::string>> rows,
            const std::string& row_class = {}, const std::string& caption = {}) {
  Block b;
  b.kind = Block::Kind::table;
  b.header = std::move(header);
  b.rows = std::move(rows);
  b.row_class = row_class;
  b.caption = caption;
  return b;
}
Block chart(std::string svg, const std::string& file, const std::string& caption) {
  Block b;
  b.kind = Block::Kind::chart;
  b.svg = std::move(svg);
  b.file = file;
  b.caption = caption;
  return b;
}

// The SVG document without its XML declaration, for inlining into HTML.
std::string inline_svg(const std::string& svg) {
  const std::size_t start = svg.find("<svg");
  return start == std::string::npos ? svg : svg.substr(start);
}

const char* const kCss = R"(body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;color:#222;
max-width:1100px;margin:0 auto;padding:16px 24px;line-height:1.4;font-size:15px}
h1{font-size:26px;border-bottom:2px solid #333;padding-bottom:4px}
h2{font-size:22px;margin-top:36px;border-bottom:1px solid #999}
h3{font-size:18px;margin-top:28px}h4{font-size:15px;margin-top:20px}
table{border-collapse:collapse;font-size:11px;margin:8px 0 16px;width:100%}
th,td{border:1px solid #ccc;padding:2px 5px;text-align:left;vertical-align:top;
overflow-wrap:anywhere}th,td.w{overflow-wrap:break-word}td.n{white-space:nowrap}
th{background:#eee}tr:nth-child(even) td{background:#f8f8f8}
caption{text-align:left;font-size:12px;color:#555;padding:2px 0}
figure{margin:12px 0 20px}figure svg{width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#555}
code{font-size:12px;overflow-wrap:anywhere}
ol.findings li{margin-bottom:4px}
@media print{body{max-width:none}figure,table{break-inside:auto}
figure{break-inside:avoid}h2,h3{break-after:avoid}thead{display:table-header-group}}
@media print,(max-width:820px){body{padding:8px 6px;font-size:13px}
table{font-size:7.5pt;line-height:1.25}th,td{padding:1px 2px}th{font-weight:normal}}
@page{size:A4;margin:12mm 10mm}
)";

std::string render_html(const std::vector<Block>& blocks) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
         "<title>timeroof report</title>\n<style>\n"
      << kCss << "</style>\n</head>\n<body>\n";
  for (const Block& b : blocks) {
    switch (b.kind) {
      case Block::Kind::heading:
        out << "<h" << b.level;
        if (!b.id.empty()) out << " id=\"" << escape(b.id) << '"';
        out << '>' << escape(b.text) << "</h" << b.level << ">\n";
        break;
      case Block::Kind::paragraph:
        out << "<p>" << escape(b.text) << "</p>\n";
        break;
      case Block::Kind::list: {
        const char* tag = b.ordered ? "ol" : "ul";
        out << '<' << tag << (b.ordered ? " class=\"findings\"" : "") << ">\n";
        for (const std::string& item : b.items) out << "<li>" << escape(item) << "</li>\n";
        out << "</" << tag << ">\n";
        break;
      }
      case Block::Kind::table:
        out << "<table>\n";
        if (!b.caption.empty()) out << "<caption>" << escape(b.caption) << "</caption>\n";
        out << "<thead><tr>";
        for (const std::string& h : b.header) out << "<th>" << escape(h) << "</th>";
        out << "</tr></thead>\n<tbody>\n";
        for (const auto& row : b.rows) {
          out << "<tr";
          if (!b.row_class.empty()) out << " class=\"" << escape(b.row_class) << '"';
          out << '>';
          for (std::size_t i = 0; i < row.size(); ++i) {
            const bool n = std::find(b.nowrap.begin(), b.nowrap.end(), i) != b.nowrap.end();
            const bool w = std::find(b.words.begin(), b.words.end(), i) != b.words.end();
            out << (n   ? "<td class=\"n\">"
                    : w ? "<td class=\"w\">"
                        : "<td>")
                << escape(row[i]) << "</td>";
          }
          out << "</tr>\n";
        }
        out << "</tbody>\n</table>\n";
        break;
      case Block::Kind::chart:
        out << "<figure>\n" << inline_svg(b.svg);
        if (!b.caption.empty()) out << "<figcaption>" << escape(b.caption) << "</figcaption>\n";
        out << "</figure>\n";
        break;
    }
  }
  out << "</body>\n</html>\n";
  return out.str();
}

// Markdown text: HTML-escaped (renderers pass HTML through), backticks as an
// entity (no code spans opened by the data), newlines as spaces.
std::string md_text(const std::string& text) {
  std::string out;
  for (char c : escape(text)) {
    if (c == '`')
      out += "&#96;";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}
// A Markdown table cell: md_text with | escaped.
std::string md_cell(const std::string& text) {
  std::string out;
  for (char c : md_text(text)) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out.empty() ? " " : out;
}

// A chart's file name with the extension of `format` ("x.svg" -> "x.png").
std::string chart_file(const std::string& svg_file, ChartFormat format) {
  if (format == ChartFormat::svg) return svg_file;
  const std::size_t dot = svg_file.rfind('.');
  return svg_file.substr(0, dot) + "." + to_string(format);
}

std::string render_markdown(const std::vector<Block>& blocks, ChartFormat format) {
  std::ostringstream out;
  for (const Block& b : blocks) {
    switch (b.kind) {
      case Block::Kind::heading:
        out << std::string(static_cast<std::size_t>(b.level), '#') << ' ' << md_text(b.text)
            << "\n\n";
        break;
      case Block::Kind::paragraph:
        out << md_text(b.text) << "\n\n";
        break;
      case Block::Kind::list: {
        int n = 0;
        for (const std::string& item : b.items) {
          if (b.ordered)
            out << ++n << ". ";
          else
            out << "- ";
          out << md_text(item) << '\n';
        }
        out << '\n';
        break;
      }
      case Block::Kind::table:
        if (!b.caption.empty()) out << '*' << md_text(b.caption) << "*\n\n";
        out << '|';
        for (const std::string& h : b.header) out << ' ' << md_cell(h) << " |";
        out << "\n|";
        for (std::size_t i = 0; i < b.header.size(); ++i) out << "---|";
        out << '\n';
        for (const auto& row : b.rows) {
          out << '|';
          for (const std::string& cell : row) out << ' ' << md_cell(cell) << " |";
          out << '\n';
        }
        out << '\n';
        break;
      case Block::Kind::chart:
        out << "![" << md_text(b.caption) << "](" << chart_file(b.file, format) << ")\n\n";
        break;
    }
  }
  return out.str();
}

// ---- Numbers and names ---------------------------------------------------------

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}
std::string percent(const std::optional<double>& fraction) {
  if (!fraction || !std::isfinite(*fraction)) return "-";
  return fixed(*fraction * 100, *fraction < 0.1 ? 1 : 0) + "%";
}
std::string time_text(const std::optional<double>& seconds) {
  if (!seconds || !std::isfinite(*seconds)) return "-";
  return *seconds == 0 ? "0" : roofline::format_time(*seconds);
}
std::string times_text(const std::optional<double>& factor) {
  if (!factor || !std::isfinite(*factor)) return "-";
  return fixed(*factor, *factor < 10 ? 2 : *factor < 100 ? 1 : 0) + "x";
}
std::string or_dash(const std::string& text) {
  return text.empty() ? "-" : text;
}

// The keys of `points`' params whose values differ between points.
std::vector<std::string> varying_keys(const std::vector<const Point*>& points) {
  std::map<std::string, std::set<std::string>> values;
  for (const Point* p : points)
    if (p->params.is_object())
      for (auto it = p->params.begin(); it != p->params.end(); ++it)
        values[it.key()].insert(param_value_text(it.value()));
  std::vector<std::string> keys;
  for (const auto& [key, seen] : values) {
    bool everywhere = true;
    for (const Point* p : points) everywhere = everywhere && p->params.contains(key);
    if (seen.size() > 1 || !everywhere) keys.push_back(key);
  }
  // The usual swept parameter first.
  auto batch = std::find(keys.begin(), keys.end(), "batch");
  if (batch != keys.end()) std::rotate(keys.begin(), batch, batch + 1);
  return keys;
}

std::string params_of(const Point& p, const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& key : keys) {
    if (!p.params.is_object() || !p.params.contains(key)) continue;
    if (key == "precision" && param_value_text(p.params.at(key)) == p.precision) continue;
    if (!out.empty()) out += ' ';
    out += key + "=" + param_value_text(p.params.at(key));
  }
  return out;
}

std::string fixed_params(const std::vector<const Point*>& points,
                         const std::vector<std::string>& varying) {
  if (points.empty()) return {};
  std::vector<std::string> keys = param_keys(points.front()->params);
  std::erase_if(keys, [&](const std::string& key) {
    return std::find(varying.begin(), varying.end(), key) != varying.end();
  });
  return params_text(points.front()->params, keys);
}

std::string clock_text(const std::optional<double>& hz) {
  return hz ? format_si(*hz, "Hz") : "-";
}

// ---- Sections -------------------------------------------------------------------

constexpr std::size_t kMaxKernels = 12;  // kernel rows per sweep

void summary_section(std::vector<Block>& doc, const RunRecord& r, const std::string& anchor) {
  const Run& run = r.run;
  doc.push_back(heading(3, "Summary", anchor + "-summary"));
  std::map<std::string, int> statuses;
  for (const Point& p : r.points) ++statuses[to_string(p.status)];
  std::string counts;
  for (const auto& [status, n] : statuses)
    counts += (counts.empty() ? "" : ", ") + status + " " + std::to_string(n);
  std::set<std::string> sweeps;
  for (const Point& p : r.points) sweeps.insert(p.sweep);
  std::string sweep_list;
  for (const std::string& s : sweeps) sweep_list += (sweep_list.empty() ? "" : ", ") + s;
  doc.push_back(
      table({"Item", "Value"},
            {{"GPU", or_dash(run.machine.gpu.name)},
             {"Date", or_dash(run.started_at)},
             {"Run status", or_dash(run.status)},
             {"Tool", "timeroof " + or_dash(run.tool_version) + " (" + or_dash(run.git_sha) + ")"},
             {"Command line", or_dash(run.command_line)},
             {"Roofs measured", std::to_string(run.machine.ceilings.size())},
             {"Sweeps", or_dash(sweep_list)},
             {"Points", std::to_string(r.points.size())},
             {"Points per status", or_dash(counts)}},
            "summary"));
}

void findings_section(std::vector<Block>& doc, const roofline::RunAnalysis& analysis,
                      const std::string& anchor) {
  doc.push_back(heading(3, "Findings", anchor + "-findings"));
  if (analysis.findings.empty()) {
    doc.push_back(paragraph("No findings: the run has no series of measured points."));
    return;
  }
  doc.push_back(
      paragraph("Ranked by the time each finding explains, in seconds summed over its points, "
                "most first; beside it the share of its series' time (each point's share of its "
                "own call, averaged over the series)."));
  std::vector<std::string> items;
  for (const roofline::Finding& f : analysis.findings)
    items.push_back(f.text + " [explains " + roofline::format_time(f.explained_s) + ", " +
                    percent(f.share) + " of the series' time]");
  doc.push_back(list(std::move(items), true));
}

void roofs_section(std::vector<Block>& doc, const RunRecord& r, const std::string& anchor) {
  const Machine& m = r.run.machine;
  doc.push_back(heading(3, "Machine roofs", anchor + "-roofs"));
  if (m.ceilings.empty()) {
    doc.push_back(paragraph("No roofs were measured in this run."));
  } else {
    doc.push_back(chart(ceilings_chart(m), anchor + "-ceilings.svg",
                        "Measured roofs against their theoretical values"));
  }
  if (!m.working_set.empty()) {
    doc.push_back(chart(working_set_chart(m), anchor + "-working-set.svg",
                        "Bandwidth against working-set size"));
  }
  std::vector<std::vector<std::string>> rows;
  for (const Ceiling& c : m.ceilings) {
    std::optional<double> ratio;
    if (c.theoretical && *c.theoretical > 0) ratio = c.measured / *c.theoretical;
    std::string clock = "SM " + clock_text(c.sm_clock_hz) + ", mem " + clock_text(c.mem_clock_hz);
    rows.push_back({c.name, format_si(c.measured, c.unit), format_si(c.theoretical, c.unit),
                    percent(ratio), clock, or_dash(c.method)});
  }
  if (!rows.empty()) {
    doc.push_back(table({"Roof", "Measured", "Theoretical", "Ratio", "Clock", "Method"},
                        std::move(rows), "ceiling"));
    doc.back().nowrap = {1, 2, 3};
  }
  if (!m.skipped.empty()) {
    std::vector<std::string> items;
    for (const CeilingSkip& s : m.skipped)
      items.push_back(s.name + (s.failed ? " failed: " : " not measured: ") + s.reason);
    doc.push_back(paragraph("Roofs not measured:"));
    doc.push_back(list(std::move(items), false));
  }
}

// The time-based roofline's complexity chart of a sweep, and the points it
// could not draw (no HBM bytes, no time).
void complexity_section(std::vector<Block>& doc, const std::vector<Point>& points,
                        const roofline::MachineRoofs& roofs, const std::string& sweep,
                        const std::string& prefix) {
  const roofline::ComplexityChart data = roofline::complexity_chart(points, roofs);
  const auto drawn = static_cast<std::size_t>(
      std::count_if(data.points.begin(), data.points.end(),
                    [](const roofline::ComplexityPoint& p) { return p.drawable; }));
  if (drawn == 0 || data.peak <= 0) return;
  doc.push_back(chart(time_complexity_chart(points, roofs, "Time-based roofline: " + sweep),
                      prefix + "-complexity.svg",
                      "Time-based roofline (complexity chart) of the " + std::to_string(drawn) +
                          " points of " + sweep +
                          " with HBM bytes: each point joined to where it would sit at the roof "
                          "for its measured time; the segment is the time lost to the roof"));
  std::vector<std::string> left_out;
  for (const std::string& note : data.notes)
    if (note.find("left out") != std::string::npos ||
        note.find("not drawable") != std::string::npos)
      left_out.push_back(note);
  constexpr std::size_t kShown = 4;
  if (!left_out.empty()) {
    std::string text = "Not on the time-based roofline: ";
    for (std::size_t i = 0; i < std::min(left_out.size(), kShown); ++i)
      text += (i ? "; " : "") + left_out[i];
    if (left_out.size() > kShown)
      text += "; and " + std::to_string(left_out.size() - kShown) + " more";
    doc.push_back(paragraph(text + "."));
  }
}

// Which transfer roofs the sweep's T_xfer is on (those of its host memory,
// pinned or pageable), and the directions left out for want of one.
void transfer_paragraph(std::vector<Block>& doc, const RunRecord& r,
                        const roofline::RunAnalysis& analysis, const std::string& sweep) {
  const roofline::MachineRoofs& roofs = analysis.roofs;
  std::vector<std::string> used, missing;
  auto add = [](std::vector<std::string>& to, const std::string& text) {
    if (!text.empty() && std::find(to.begin(), to.end(), text) == to.end()) to.push_back(text);
  };
  for (const roofline::PointAnalysis& pa : analysis.points) {
    if (!pa.analysed || r.points[pa.index].sweep != sweep) continue;
    const roofline::PointBounds& b = pa.bounds;
    add(used, roofline::transfer_roofs_text(b));
    for (const roofline::TransferBounds& x : b.transfers) {
      if (!x.bytes || !(*x.bytes > 0) || x.bandwidth) continue;
      add(missing, std::string("no ") + to_string(b.transfer_host) + " " +
                       direction_name(x.direction) +
                       " roof, those copies are left out of T_xfer (" +
                       roofs.transfer(x.direction, b.transfer_host).note + ")");
    }
  }
  if (used.empty() && missing.empty()) return;
  std::string text = "Transfers of " + sweep + ": ";
  std::string parts;
  for (const std::string& u : used) parts += (parts.empty() ? "T_xfer on the " : "; ") + u;
  for (const std::string& m : missing) parts += (parts.empty() ? "" : "; ") + m;
  doc.push_back(paragraph(text + parts + "."));
}

void sweep_section(std::vector<Block>& doc, const RunRecord& r,
                   const roofline::RunAnalysis& analysis, const std::string& sweep,
                   const std::string& anchor, std::size_t sweep_number) {
  const roofline::MachineRoofs& roofs = analysis.roofs;
  std::vector<Point> points;
  std::vector<const Point*> refs;
  std::vector<const roofline::PointAnalysis*> models;  // parallel to points
  for (const roofline::PointAnalysis& pa : analysis.points) {
    if (r.points[pa.index].sweep != sweep) continue;
    points.push_back(r.points[pa.index]);
    models.push_back(&pa);
  }
  for (const Point& p : points) refs.push_back(&p);
  const std::string prefix =
      anchor + "-sweep" + std::to_string(sweep_number) + "-" + file_name_part(sweep);
  doc.push_back(heading(3, "Sweep " + sweep, prefix));

  std::vector<PointSample> samples;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const roofline::PointAnalysis& pa = *models[i];
    if (points[i].status != PointStatus::ok || !pa.bounds.achieved || !(*pa.bounds.achieved > 0))
      continue;
    samples.push_back(point_sample(points[i], pa.bounds, pa.classification));
  }
  if (!samples.empty()) {
    doc.push_back(chart(classic_roofline_chart(roofs, samples, "Hierarchical Roofline: " + sweep),
                        prefix + "-roofline.svg",
                        "Classic hierarchical roofline of the " + std::to_string(samples.size()) +
                            " measured points of " + sweep));
  }
  complexity_section(doc, points, roofs, sweep, prefix);
  transfer_paragraph(doc, r, analysis, sweep);

  std::size_t series_number = 0;
  for (const roofline::SeriesAnalysis& sa : analysis.series) {
    const roofline::Series& s = sa.series;
    if (s.sweep != sweep) continue;
    ++series_number;
    std::vector<SeriesPoint> chart_points;
    bool tensor_work = false;
    for (const roofline::SeriesPoint& sp : s.points) {
      chart_points.push_back({sp.x, sp.bounds,
                              s.name() + " " + s.parameter + "=" + roofline::format_value(sp.x),
                              sp.classification});
      tensor_work = tensor_work || sp.bounds.tensor_share.value_or(0) > 0;
    }
    const std::string fixed_text = params_text(s.fixed);
    const std::string file = prefix + "-series" + std::to_string(series_number);
    doc.push_back(heading(4, s.name() + " against " + s.parameter));
    const std::string title = s.name() + ": time against " + s.parameter;
    doc.push_back(chart(time_vs_parameter_chart(chart_points, s.parameter, title), file + ".svg",
                        title + " (" + fixed_text +
                            "): T_stream, T_call and T_graph with their "
                            "95% intervals, T_k and the bounds"));
    const std::string parts = s.name() + ": where the time goes, against " + s.parameter;
    doc.push_back(chart(time_decomposition_chart(chart_points, s.parameter, parts),
                        file + "-decomposition.svg",
                        parts + ": host overhead, device gaps, transfer, kernel time within and "
                                "lost to the roof"));
    if (tensor_work) {
      const std::string tc = s.name() + ": Tensor Cores against " + s.parameter;
      doc.push_back(chart(tensor_core_chart(chart_points, s.parameter, tc), file + "-tensor.svg",
                          tc + ": share of the FLOPs and utilisation of the Tensor-Core roof"));
    } else {
      doc.push_back(paragraph("Tensor Cores do none of the FLOPs of " + s.name() + " (math " +
                              or_dash(s.math_mode) + "): no Tensor-Core chart."));
    }
  }

  // The kernels the sweep ran, most traced time first.
  struct KernelTotal {
    double seconds = 0;
    int points = 0;
  };
  std::map<std::string, KernelTotal> kernels;
  for (const Point& p : points) {
    std::set<std::string> seen;
    for (const KernelRecord& k : p.kernels) {
      KernelTotal& total = kernels[k.name];
      total.seconds += k.duration_s;
      if (seen.insert(k.name).second) ++total.points;
    }
  }
  if (!kernels.empty()) {
    std::vector<std::pair<std::string, KernelTotal>> ranked(kernels.begin(), kernels.end());
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.second.seconds > b.second.seconds;
    });
    const std::size_t shown = std::min<std::size_t>(ranked.size(), kMaxKernels);
    std::vector<std::vector<std::string>> rows;
    for (std::size_t i = 0; i < shown; ++i) {
      rows.push_back({ranked[i].first, std::to_string(ranked[i].second.points),
                      roofline::format_time(ranked[i].second.seconds)});
    }
    doc.push_back(table({"Kernel", "Points", "Traced time (sum over points)"}, std::move(rows),
                        "kernel",
                        "Kernels of " + sweep + ": the " + std::to_string(shown) + " of " +
                            std::to_string(ranked.size()) + " with the most traced time"));
  }

  const std::vector<std::string> keys = varying_keys(refs);
  const std::string fixed_text = fixed_params(refs, keys);
  std::vector<std::vector<std::string>> rows, times;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const roofline::PointBounds& b = models[i]->bounds;
    const roofline::Classification& c = models[i]->classification;
    const bool analysed = models[i]->analysed;
    std::string status = to_string(p.status);
    if (!p.reason.empty()) status += ": " + p.reason;
    std::string precision = p.precision + (p.math_mode.empty() ? "" : "/" + p.math_mode);
    const std::string params = or_dash(params_of(p, keys));
    rows.push_back({std::to_string(p.seq), p.op + " " + precision, params, time_text(b.time_s),
                    time_text(b.kernel_s), b.launches ? std::to_string(*b.launches) : "-",
                    p.status == PointStatus::ok ? c.label() : "-", percent(b.efficiency),
                    percent(b.tensor_share), times_text(b.headroom), status});
    if (!analysed) continue;
    const roofline::Decomposition& d = c.parts;
    const std::string host = time_text(d.host_overhead_s) + (d.separated ? "" : " (with gaps)");
    times.push_back({std::to_string(p.seq), params, roofline::format_time_stats(b.call),
                     roofline::format_time_stats(b.stream), roofline::format_time_stats(b.graph),
                     roofline::format_time_stats(b.issue), host,
                     d.separated ? time_text(d.device_gaps_s) : "-", time_text(d.transfer_s),
                     time_text(d.within_roof_s), time_text(d.lost_to_roof_s),
                     time_text(d.not_explained_s), c.reason});
  }
  doc.push_back(table({"#", "Operator", "Parameters", "Time T", "Kernel time", "Launches", "Bound",
                       "Efficiency", "Tensor-Core share", "Headroom", "Status"},
                      std::move(rows), "point",
                      "Points of " + sweep + (fixed_text.empty() ? "" : "; fixed: " + fixed_text) +
                          ". T is T_stream where measured, else T_call."));
  // Numbers and class labels whole; the text columns wrap, so the table fits A4.
  doc.back().nowrap = {0, 3, 4, 5, 6, 7, 8, 9};
  doc.back().words = {1};
  if (times.empty()) return;
  doc.push_back(table(
      {"#", "Parameters", "T_call", "T_stream", "T_graph", "Issue", "Host overhead", "Device gaps",
       "Transfer", "Kernels within roof", "Lost to roof", "Not explained", "Class: why"},
      std::move(times), "times",
      "Measured times of " + sweep +
          " (median +- half its 95% interval) and where T goes: host overhead = "
          "T - T_graph, device gaps = T_graph - T_k - transfer (\"with gaps\" "
          "where T_graph was not measured); not explained is negative where "
          "measured parts exceed T (see the findings)."));
  doc.back().nowrap = {0};
  doc.back().words = {2, 3, 4, 5, 6, 12};
}

void provenance_section(std::vector<Block>& doc, const RunRecord& r, const std::string& anchor) {
  const Run& run = r.run;
  const GpuInfo& g = run.machine.gpu;
  const SoftwareVersions& v = g.versions;
  doc.push_back(heading(3, "Provenance", anchor + "-provenance"));
  doc.push_back(
      table({"Item", "Value"},
            {{"GPU", or_dash(g.name) + " (chip " + or_dash(g.chip) + ", compute capability " +
                         std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor) + ", " +
                         std::to_string(g.sm_count) + " SMs)"},
             {"GPU UUID", or_dash(g.uuid)},
             {"PCI bus", or_dash(g.pci_bus_id)},
             {"Memory", format_binary_bytes(static_cast<double>(g.memory_bytes)) + ", L2 " +
                            format_binary_bytes(static_cast<double>(g.l2_bytes))},
             {"Driver", or_dash(v.driver) + " (CUDA " + or_dash(v.cuda_driver) + ")"},
             {"CUDA runtime", or_dash(v.cuda_runtime)},
             {"cuDNN", or_dash(v.cudnn)},
             {"cuBLAS", or_dash(v.cublas)},
             {"CUPTI", or_dash(v.cupti)},
             {"SM clock", clock_text(g.sm_clock_current_hz) + " current, " +
                              clock_text(g.sm_clock_base_hz) + " base, " +
                              clock_text(g.sm_clock_max_hz) + " max"},
             {"Memory clock", clock_text(g.mem_clock_current_hz) + " current, " +
                                  clock_text(g.mem_clock_max_hz) + " max"},
             {"Counters",
              g.counters.available ? "available" : "unavailable: " + or_dash(g.counters.reason)},
             {"Command line", or_dash(run.command_line)},
             {"Host", or_dash(run.host)},
             {"Started", or_dash(run.started_at)},
             {"Finished", or_dash(run.finished_at)},
             {"Tool version", or_dash(run.tool_version)},
             {"Git sha", or_dash(run.git_sha)},
             {"Run uuid", or_dash(run.uuid)}},
            "provenance"));
}

// ---- Converting charts ------------------------------------------------------------

// The absolute path of `program` in a directory of $PATH, or empty.
std::string find_on_path(const std::string& program) {
  const char* env = std::getenv("PATH");
  const std::string dirs = env ? env : "";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    start = end + 1;
    if (dir.empty()) continue;  // "." by POSIX; never run a program from the working directory
    const std::string path = (std::filesystem::path(dir) / program).string();
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0) return path;
  }
  return {};
}

// Starts argv (argv[0] a path) with stdout and stderr discarded; its pid, or -1.
pid_t spawn_silent(const std::vector<std::string>& argv) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int started = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return started == 0 ? pid : -1;
}

// Runs argv (argv[0] a path) with stdout discarded; returns its exit code (-1:
// could not start or was killed) and the first line it wrote to stderr.
std::pair<int, std::string> run_quietly(const std::vector<std::string>& argv) {
  int err[2];
  if (pipe(err) != 0) return {-1, "cannot create a pipe"};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, err[0]);
  posix_spawn_file_actions_addclose(&actions, err[1]);
  std::vector<char*> args;
  std::vector<std::string> copy = argv;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int started = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(err[1]);
  std::string text;
  char buffer[4096];
  ssize_t n = 0;
  // Read to EOF before waiting, so a chatty child never blocks on a full pipe.
  while ((n = read(err[0], buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
  close(err[0]);
  if (started != 0) return {-1, std::string("cannot start: ") + std::strerror(started)};
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  text = text.substr(0, text.find('\n'));
  return {code, text};
}

// ---- Writing files ------------------------------------------------------------------

// What to do about a write that failed with `error`, for the message.
std::string write_fix(int error) {
  switch (error) {
    case EACCES:
    case EPERM:
    case EROFS:
      return "pass a writable --out";
    case ENOSPC:
    case EDQUOT:
      return "free some space or pass another --out";
    case ENAMETOOLONG:
      return "pass a shorter --out";
    default:
      return "check the --out directory";
  }
}

// Writes `text` to `path`; a usage error naming the path, the system's reason
// and the fix when it cannot. A file left part-written is removed.
void write_file(const std::filesystem::path& path, const std::string& text) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  int error = file ? 0 : errno;
  if (file && std::fwrite(text.data(), 1, text.size(), file) != text.size()) error = errno;
  if (file && std::fclose(file) != 0 && error == 0) error = errno;
  if (error == 0) return;
  if (file) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
  throw usage_error("cannot write " + path.string() + " (" + std::strerror(error) + "); " +
                    write_fix(error));
}

// Writes each (name, text) into `dir` under a temporary name, then renames them
// into place, the last one last (index.html): a failure part-way (a full disk, a
// name too long) removes what it wrote and leaves no half-written report.
void write_all_or_none(const std::string& dir,
                       const std::vector<std::pair<std::string, std::string>>& files) {
  namespace fs = std::filesystem;
  std::vector<fs::path> staged;
  auto remove_staged = [&] {
    std::error_code ignored;
    for (const fs::path& path : staged) fs::remove(path, ignored);
  };
  try {
    for (const auto& [name, text] : files) {
      const fs::path path = fs::path(dir) / ("." + name + ".partial");
      write_file(path, text);
      staged.push_back(path);
    }
  } catch (...) {
    remove_staged();
    throw;
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    const fs::path path = fs::path(dir) / files[i].first;
    std::error_code ec;
    fs::rename(staged[i], path, ec);
    if (ec) {
      staged.erase(staged.begin(), staged.begin() + static_cast<std::ptrdiff_t>(i));
      remove_staged();
      throw usage_error("cannot write " + path.string() + " (" + ec.message() + "); " +
                        write_fix(ec.value()));
    }
  }
}

}  // namespace

namespace {

std::vector<Block> report_blocks(const std::vector<RunRecord>& runs) {
  std::vector<Block> doc;
  doc.push_back(heading(1, "timeroof report"));
  doc.push_back(paragraph("Why each operator takes the time it takes: " +
                          std::to_string(runs.size()) + " run(s), written by timeroof " +
                          kToolVersion + " (" + kGitSha + ") at " + utc_now_iso8601() + "."));
  std::size_t run_number = 0;
  for (const RunRecord& r : runs) {
    ++run_number;
    const std::string anchor = "run" + std::to_string(run_number);
    const roofline::RunAnalysis analysis = roofline::analyze(r);
    doc.push_back(heading(2,
                          "Run " + std::to_string(run_number) + ": " +
                              or_dash(r.run.machine.gpu.name) + ", " + or_dash(r.run.started_at),
                          anchor));
    summary_section(doc, r, anchor);
    findings_section(doc, analysis, anchor);
    roofs_section(doc, r, anchor);
    std::vector<std::string> sweeps;
    for (const Point& p : r.points)
      if (std::find(sweeps.begin(), sweeps.end(), p.sweep) == sweeps.end())
        sweeps.push_back(p.sweep);
    std::size_t sweep_number = 0;
    for (const std::string& sweep : sweeps)
      sweep_section(doc, r, analysis, sweep, anchor, ++sweep_number);
    provenance_section(doc, r, anchor);
  }
  return doc;
}

}  // namespace

ReportDocuments render_report(const std::vector<RunRecord>& runs, ChartFormat format) {
  const std::vector<Block> doc = report_blocks(runs);
  ReportDocuments out;
  out.html = render_html(doc);
  out.markdown = render_markdown(doc, format);
  for (const Block& b : doc)
    if (b.kind == Block::Kind::chart) out.charts.emplace_back(b.file, b.svg);
  return out;
}

const char* to_string(ChartFormat format) {
  switch (format) {
    case ChartFormat::svg:
      return "svg";
    case ChartFormat::png:
      return "png";
    case ChartFormat::pdf:
      return "pdf";
  }
  return "svg";
}

ChartFormat parse_chart_format(const std::string& name) {
  for (ChartFormat f : {ChartFormat::svg, ChartFormat::png, ChartFormat::pdf})
    if (name == to_string(f)) return f;
  throw usage_error("unknown chart format '" + name + "'; use svg, png or pdf");
}

void write_report(const std::vector<RunRecord>& runs, const std::string& out_dir,
                  ChartFormat format) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) {
    throw usage_error("cannot create the report directory " + out_dir + " (" + ec.message() +
                      "); pass a writable --out");
  }
  const std::vector<Block> doc = report_blocks(runs);
  // The SVG report first: it stands on its own if the conversion cannot run.
  std::vector<std::pair<std::string, std::string>> files;  // name, text
  std::vector<std::string> charts;
  for (const Block& b : doc) {
    if (b.kind != Block::Kind::chart) continue;
    files.emplace_back(b.file, b.svg);
    charts.push_back(b.file);
  }
  files.emplace_back("report.md", render_markdown(doc, ChartFormat::svg));
  files.emplace_back("index.html", render_html(doc));
  write_all_or_none(out_dir, files);
  if (format == ChartFormat::svg) return;

  const std::string tool = find_on_path("rsvg-convert");
  if (tool.empty()) {
    throw environment_error(std::string("rsvg-convert is not installed (not on PATH); ") +
                            to_string(format) +
                            " charts need it: install it with `sudo apt-get install "
                            "librsvg2-bin` (the report with SVG charts is in " +
                            out_dir + ")");
  }
  auto command = [&](const std::string& name) {
    std::vector<std::string> argv = {tool, "--format", to_string(format)};
    // PNG at twice the SVG's size: sharp on a slide and in print.
    if (format == ChartFormat::png) argv.insert(argv.end(), {"--zoom", "2"});
    argv.insert(argv.end(), {"--output", (fs::path(out_dir) / chart_file(name, format)).string(),
                             (fs::path(out_dir) / name).string()});
    return argv;
  };
  // One rsvg-convert per core at a time (a report has dozens of charts).
  const std::size_t jobs = std::max(1u, std::thread::hardware_concurrency());
  std::deque<std::pair<pid_t, std::size_t>> running;  // pid, chart
  std::vector<std::size_t> failed;
  auto reap_oldest = [&] {
    int status = 0;
    while (waitpid(running.front().first, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed.push_back(running.front().second);
    running.pop_front();
  };
  for (std::size_t i = 0; i < charts.size(); ++i) {
    if (running.size() >= jobs) reap_oldest();
    const pid_t pid = spawn_silent(command(charts[i]));
    if (pid > 0)
      running.emplace_back(pid, i);
    else
      failed.push_back(i);
  }
  while (!running.empty()) reap_oldest();
  if (!failed.empty()) {
    // Once more in the foreground, for what rsvg-convert says.
    const std::string& name = charts[*std::min_element(failed.begin(), failed.end())];
    const auto [code, message] = run_quietly(command(name));
    throw environment_error(
        "rsvg-convert could not convert " + (fs::path(out_dir) / name).string() + " (" +
        (message.empty() ? "exit " + std::to_string(code) : message) + ")" +
        (failed.size() > 1 ? " nor " + std::to_string(failed.size() - 1) + " other chart(s)" : "") +
        "; the report with SVG charts is in " + out_dir);
  }
  write_file(fs::path(out_dir) / "report.md", render_markdown(doc, format));
}

}  // namespace timeroof::plots
