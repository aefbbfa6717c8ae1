#include "plots/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/format.hpp"
#include "plots/charts.hpp"
#include "plots/svg.hpp"
#include "roofline/bounds.hpp"
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
  std::string row_class;  // table: class of every body row
  std::string caption;    // table, chart
  std::string svg;        // chart
  std::string file;       // chart: file name next to report.md
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
overflow-wrap:anywhere}
th{background:#eee}tr:nth-child(even) td{background:#f8f8f8}
caption{text-align:left;font-size:12px;color:#555;padding:2px 0}
figure{margin:12px 0 20px}figure svg{width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#555}
code{font-size:12px;overflow-wrap:anywhere}
ol.findings li{margin-bottom:4px}
@media print{body{max-width:none;font-size:11pt}figure,table{break-inside:auto}
figure{break-inside:avoid}h2,h3{break-after:avoid}}
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
          for (const std::string& cell : row) out << "<td>" << escape(cell) << "</td>";
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

std::string render_markdown(const std::vector<Block>& blocks) {
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
        out << "![" << md_text(b.caption) << "](" << b.file << ")\n\n";
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
  return seconds && std::isfinite(*seconds) ? roofline::format_time(*seconds) : "-";
}
std::string times_text(const std::optional<double>& factor) {
  if (!factor || !std::isfinite(*factor)) return "-";
  return fixed(*factor, *factor < 10 ? 2 : *factor < 100 ? 1 : 0) + "x";
}
std::string or_dash(const std::string& text) {
  return text.empty() ? "-" : text;
}

std::string json_value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// A name safe in a file name: letters, digits, '-' and '_'.
std::string file_safe(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    out += ok ? c : '-';
  }
  return out.empty() ? "sweep" : out;
}

// The keys of `points`' params whose values differ between points.
std::vector<std::string> varying_keys(const std::vector<const Point*>& points) {
  std::map<std::string, std::set<std::string>> values;
  for (const Point* p : points)
    if (p->params.is_object())
      for (auto it = p->params.begin(); it != p->params.end(); ++it)
        values[it.key()].insert(json_value_text(it.value()));
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
    if (key == "precision" && json_value_text(p.params.at(key)) == p.precision) continue;
    if (!out.empty()) out += ' ';
    out += key + "=" + json_value_text(p.params.at(key));
  }
  return out;
}

std::string fixed_params(const std::vector<const Point*>& points,
                         const std::vector<std::string>& varying) {
  if (points.empty() || !points.front()->params.is_object()) return {};
  std::string out;
  const nlohmann::json& params = points.front()->params;
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (std::find(varying.begin(), varying.end(), it.key()) != varying.end()) continue;
    if (!out.empty()) out += ' ';
    out += it.key() + "=" + json_value_text(it.value());
  }
  return out;
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

void findings_section(std::vector<Block>& doc, const RunRecord& r,
                      const roofline::MachineRoofs& roofs, const std::string& anchor) {
  doc.push_back(heading(3, "Findings", anchor + "-findings"));
  const std::vector<roofline::Finding> found = roofline::findings(r.points, roofs);
  if (found.empty()) {
    doc.push_back(paragraph("No findings: the run has no series of measured points."));
    return;
  }
  doc.push_back(
      paragraph("Ranked by the time each finding explains (summed over its points), most first."));
  std::vector<std::string> items;
  for (const roofline::Finding& f : found)
    items.push_back(f.text + " [explains " + roofline::format_time(f.explained_s) + "]");
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
  }
  if (!m.skipped.empty()) {
    std::vector<std::string> items;
    for (const CeilingSkip& s : m.skipped)
      items.push_back(s.name + (s.failed ? " failed: " : " not measured: ") + s.reason);
    doc.push_back(paragraph("Roofs not measured:"));
    doc.push_back(list(std::move(items), false));
  }
}

void sweep_section(std::vector<Block>& doc, const RunRecord& r, const roofline::MachineRoofs& roofs,
                   const std::string& sweep, const std::string& anchor, std::size_t sweep_number) {
  std::vector<Point> points;
  std::vector<const Point*> refs;
  for (const Point& p : r.points)
    if (p.sweep == sweep) points.push_back(p);
  for (const Point& p : points) refs.push_back(&p);
  const std::string prefix =
      anchor + "-sweep" + std::to_string(sweep_number) + "-" + file_safe(sweep);
  doc.push_back(heading(3, "Sweep " + sweep, prefix));

  const std::vector<PointSample> samples = point_samples(points, roofs);
  if (!samples.empty()) {
    doc.push_back(chart(classic_roofline_chart(roofs, samples, "Hierarchical Roofline: " + sweep),
                        prefix + "-roofline.svg",
                        "Classic hierarchical roofline of the " + std::to_string(samples.size()) +
                            " measured points of " + sweep));
  }

  const std::vector<roofline::Series> series = roofline::group_series(points, roofs);
  std::size_t series_number = 0;
  for (const roofline::Series& s : series) {
    ++series_number;
    std::vector<SeriesPoint> chart_points;
    for (const roofline::SeriesPoint& sp : s.points) {
      chart_points.push_back(
          {sp.x, sp.bounds, s.name() + " " + s.parameter + "=" + roofline::format_value(sp.x)});
    }
    std::string fixed_text;
    for (auto it = s.fixed.begin(); it != s.fixed.end(); ++it)
      fixed_text += (fixed_text.empty() ? "" : " ") + it.key() + "=" + json_value_text(it.value());
    const std::string title = s.name() + ": time against " + s.parameter;
    doc.push_back(heading(4, title));
    doc.push_back(chart(time_vs_parameter_chart(chart_points, s.parameter, title),
                        prefix + "-series" + std::to_string(series_number) + ".svg",
                        title + " (" + fixed_text + ")"));
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
  std::vector<std::vector<std::string>> rows;
  for (const Point& p : points) {
    const roofline::PointBounds b = roofline::point_bounds(p, roofs);
    const roofline::Classification c = roofline::classify(b);
    std::string status = to_string(p.status);
    if (!p.reason.empty()) status += ": " + p.reason;
    std::string precision = p.precision + (p.math_mode.empty() ? "" : "/" + p.math_mode);
    rows.push_back({std::to_string(p.seq), p.op + " " + precision, or_dash(params_of(p, keys)),
                    time_text(b.wall_s), time_text(b.kernel_s),
                    b.launches ? std::to_string(*b.launches) : "-",
                    p.status == PointStatus::ok ? c.label() : "-", percent(b.efficiency),
                    percent(b.tensor_share), times_text(b.headroom), status});
  }
  doc.push_back(table({"#", "Operator", "Parameters", "Wall time", "Kernel time", "Launches",
                       "Bound", "Efficiency", "Tensor-Core share", "Headroom", "Status"},
                      std::move(rows), "point",
                      "Points of " + sweep + (fixed_text.empty() ? "" : "; fixed: " + fixed_text)));
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

}  // namespace

ReportDocuments render_report(const std::vector<RunRecord>& runs) {
  std::vector<Block> doc;
  doc.push_back(heading(1, "timeroof report"));
  doc.push_back(paragraph("Why each operator takes the time it takes: " +
                          std::to_string(runs.size()) + " run(s), written by timeroof " +
                          kToolVersion + " (" + kGitSha + ") at " + utc_now_iso8601() + "."));
  std::size_t run_number = 0;
  for (const RunRecord& r : runs) {
    ++run_number;
    const std::string anchor = "run" + std::to_string(run_number);
    const roofline::MachineRoofs roofs = roofline::machine_roofs(r.run.machine);
    doc.push_back(heading(2,
                          "Run " + std::to_string(run_number) + ": " +
                              or_dash(r.run.machine.gpu.name) + ", " + or_dash(r.run.started_at),
                          anchor));
    summary_section(doc, r, anchor);
    findings_section(doc, r, roofs, anchor);
    roofs_section(doc, r, anchor);
    std::vector<std::string> sweeps;
    for (const Point& p : r.points)
      if (std::find(sweeps.begin(), sweeps.end(), p.sweep) == sweeps.end())
        sweeps.push_back(p.sweep);
    std::size_t sweep_number = 0;
    for (const std::string& sweep : sweeps)
      sweep_section(doc, r, roofs, sweep, anchor, ++sweep_number);
    provenance_section(doc, r, anchor);
  }
  ReportDocuments out;
  out.html = render_html(doc);
  out.markdown = render_markdown(doc);
  for (const Block& b : doc)
    if (b.kind == Block::Kind::chart) out.charts.emplace_back(b.file, b.svg);
  return out;
}

void write_report(const std::vector<RunRecord>& runs, const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) {
    throw usage_error("cannot create the report directory " + out_dir + " (" + ec.message() +
                      "); pass a writable --out");
  }
  const ReportDocuments docs = render_report(runs);
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = (fs::path(out_dir) / name).string();
    std::ofstream file(path, std::ios::binary);
    if (!(file << text) || !file.flush()) {
      throw usage_error("cannot write " + path + "; check that the directory is writable");
    }
  };
  for (const auto& [name, svg] : docs.charts) write(name, svg);
  write("report.md", docs.markdown);
  write("index.html", docs.html);
}

}  // namespace timeroof::plots
