#include "plots/report_sections.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/format.hpp"
#include "core/power.hpp"
#include "plots/charts.hpp"
#include "plots/energy_chart.hpp"
#include "plots/model_chart.hpp"
#include "plots/profile_report.hpp"
#include "roofline/analysis.hpp"
#include "roofline/bounds.hpp"
#include "roofline/charts_data.hpp"
#include "roofline/classify.hpp"
#include "roofline/findings.hpp"
#include "roofline/glossary.hpp"
#include "roofline/machine_roofs.hpp"
#include "roofline/profile_analysis.hpp"
#include "roofline/sweep_fit.hpp"
#include "timeroof/version.hpp"

namespace timeroof::plots::detail {

namespace {

// ---- Numbers and names ---------------------------------------------------------

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

// ---- Anchors ---------------------------------------------------------------------

// The id of a sweep's heading, also the prefix of its chart files.
std::string sweep_anchor(const std::string& run_anchor, std::size_t sweep_number,
                         const std::string& sweep) {
  return run_anchor + "-sweep" + std::to_string(sweep_number) + "-" + file_name_part(sweep);
}

// The id of each series' heading (its charts follow it), parallel to
// analysis.series: the sweep's anchor, "-series" and its number in the sweep.
std::vector<std::string> series_anchors(const roofline::RunAnalysis& analysis,
                                        const std::string& run_anchor) {
  std::vector<std::string> out(analysis.series.size());
  for (std::size_t k = 0; k < analysis.sweeps.size(); ++k) {
    std::size_t series_number = 0;
    for (std::size_t i = 0; i < analysis.series.size(); ++i)
      if (analysis.series[i].series.sweep == analysis.sweeps[k].name)
        out[i] = sweep_anchor(run_anchor, k + 1, analysis.sweeps[k].name) + "-series" +
                 std::to_string(++series_number);
  }
  return out;
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

std::string percent_text(double share) {
  return format_number(100 * share, hint::significant_3) + "%";
}

// A model run's whole-model view (roofline/model_analysis.hpp): per batch its time,
// bound and headroom, the time against batch, OpBench's share per operator type,
// the layers that explain most of the gap, and every layer at the largest batch.
void model_section(std::vector<Block>& doc, const roofline::RunAnalysis& analysis,
                   const std::string& anchor) {
  if (!analysis.model) return;
  const roofline::ModelAnalysis& m = *analysis.model;
  doc.push_back(heading(3, "Model: " + m.name, anchor + "-model"));
  doc.push_back(paragraph(
      m.title + ". Shapes: " + m.source +
      ". Each distinct layer was measured once per batch; the model's time is the sum over its "
      "layers of count x T (T_stream), its Benanza lower bound the sum of count x each layer's "
      "T_lb, and the headroom their ratio."));
  std::vector<std::vector<std::string>> rows;
  for (const roofline::ModelBatch& b : m.batches)
    rows.push_back(
        {std::to_string(b.batch), format_time(b.time_s), b.graph_s ? format_time(*b.graph_s) : "-",
         b.kernel_s ? format_time(*b.kernel_s) : "-", b.bound_s > 0 ? format_time(b.bound_s) : "-",
         b.headroom ? format_number(*b.headroom, hint::significant_3) + "x" : "-",
         b.missing.empty() ? "-" : std::to_string(b.missing.size())});
  doc.push_back(table({"Batch", "T_model", "T_graph sum", "T_k sum", "T_lb (Benanza)", "Headroom",
                       "Layers without a time"},
                      rows, "model", "the model per forward pass, per batch"));
  const std::string svg = model_time_chart(m);
  if (!svg.empty())
    doc.push_back(chart(svg, anchor + "-model-time.svg",
                        m.name + ": the model's time, T_graph sum and lower bound against batch"));
  // OpBench's table: share of the model's time per operator type.
  std::vector<std::string> header = {"Operator type"};
  for (const roofline::ModelBatch& b : m.batches)
    header.push_back("batch " + std::to_string(b.batch));
  std::vector<std::string> types;
  for (const roofline::ModelLayerInfo& layer : m.layers)
    if (std::find(types.begin(), types.end(), layer.type) == types.end())
      types.push_back(layer.type);
  std::vector<std::vector<std::string>> shares;
  for (const std::string& type : types) {
    std::vector<std::string> row = {type};
    for (const roofline::ModelBatch& b : m.batches) {
      const auto found =
          std::find_if(b.shares.begin(), b.shares.end(),
                       [&](const roofline::OperatorTypeShare& s) { return s.type == type; });
      row.push_back(found == b.shares.end() ? "-" : percent_text(found->share));
    }
    shares.push_back(row);
  }
  doc.push_back(table(header, shares, "model-shares",
                      "time share per operator type (OpBench): count x T summed per type, over "
                      "T_model"));
  for (const roofline::ModelBatch& b : m.batches) {
    if (b.gap_ranking.empty()) continue;
    const double gap = b.time_s - b.bound_s;
    std::vector<std::vector<std::string>> gaps;
    for (std::size_t i = 0; i < b.gap_ranking.size() && i < 8; ++i) {
      const roofline::ModelLayerResult& r = b.layers[b.gap_ranking[i]];
      gaps.push_back({m.layers[r.layer].name, std::to_string(m.layers[r.layer].count),
                      or_dash(r.class_label), format_time(r.gap_s),
                      gap > 0 ? percent_text(r.gap_s / gap) : "-"});
    }
    doc.push_back(table(
        {"Layer", "Count", "Class", "count x (T - T_lb)", "Of the gap"}, gaps, "model-gap",
        "batch " + std::to_string(b.batch) +
            ": the layers that explain most of the gap T_model - T_lb (" + format_time(gap) + ")"));
  }
  const roofline::ModelBatch& last = m.batches.back();
  std::vector<std::vector<std::string>> layers;
  for (const roofline::ModelLayerResult& r : last.layers) {
    const roofline::ModelLayerInfo& info = m.layers[r.layer];
    layers.push_back({info.name, info.family, std::to_string(info.count),
                      r.time_s ? format_time(*r.time_s) : r.status,
                      r.time_s ? format_time(r.total_s) : "-",
                      r.time_s && last.time_s > 0 ? percent_text(r.total_s / last.time_s) : "-",
                      r.bound_s ? format_time(*r.bound_s) : "-",
                      r.headroom ? format_number(*r.headroom, hint::significant_3) + "x" : "-",
                      or_dash(r.class_label)});
  }
  doc.push_back(table(
      {"Layer", "Family", "Count", "T per call", "count x T", "Share", "T_lb", "Headroom", "Class"},
      layers, "model-layers", "every layer at batch " + std::to_string(last.batch)));
}

void findings_section(std::vector<Block>& doc, const roofline::RunAnalysis& analysis,
                      const std::string& anchor) {
  doc.push_back(heading(3, "Findings", anchor + "-findings"));
  if (analysis.findings.empty()) {
    doc.push_back(paragraph("No findings: the run has no series of measured points."));
    return;
  }
  doc.push_back(paragraph(
      "Ranked by the time each finding explains, most first: per call, summed over its points "
      "(a 50 ms finding before a 1 ms one, whatever their shares); after it the share of its "
      "series' time (each point's share of its own call, averaged over the series), and a link "
      "to the charts of its series (of its sweep, for a point outside any series)."));
  const std::vector<std::string> anchors = series_anchors(analysis, anchor);
  std::vector<std::string> items, links;
  for (const roofline::Finding& f : analysis.findings) {
    items.push_back(roofline::format_time(f.explained_s) + " — " + f.text + " (" +
                    format_number(f.share, hint::share) + " of the series' time)");
    // Its series' charts; a point outside any series is drawn in its sweep's charts.
    std::string link;
    for (std::size_t i = 0; i < analysis.series.size() && link.empty(); ++i)
      if (analysis.series[i].series.sweep == f.sweep &&
          analysis.series[i].series.name() == f.series)
        link = anchors[i];
    for (std::size_t k = 0; k < analysis.sweeps.size() && link.empty(); ++k)
      if (analysis.sweeps[k].name == f.sweep)
        link = sweep_anchor(anchor, k + 1, analysis.sweeps[k].name);
    links.push_back(link);
  }
  doc.push_back(list(std::move(items), true));
  doc.back().links = std::move(links);
  doc.back().link_text = "its charts";
}

// The machine's roofs the model flags (above their peak, or spread), from the
// analysis: a reviewer reads every bound on such a roof with that in mind.
void roof_findings_section(std::vector<Block>& doc, const roofline::RunAnalysis& analysis) {
  if (analysis.roof_findings.empty()) return;
  doc.push_back(
      paragraph("Roofs flagged (machine-level; see Machine roofs below): bounds on "
                "these roofs are less sure."));
  std::vector<std::string> items;
  for (const roofline::RoofFinding& f : analysis.roof_findings)
    items.push_back((f.label == "roof_above_peak" ? "Above its peak: " : "Spread: ") + f.text);
  doc.push_back(list(std::move(items), false));
}

// A table row of a printed page stays within about ten lines; the export keeps all.
constexpr std::size_t kReportMethodChars = 700;

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
                    format_number(ratio, hint::percent_1), clock,
                    or_dash(shortened_method(c.method, kReportMethodChars))});
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

// Power, energy per FLOP or byte, sustained loads and library references at
// the roof's clock (issue 15), from the analysis; nothing for runs without them.
void energy_section(std::vector<Block>& doc, const RunRecord& r,
                    const roofline::RunAnalysis& analysis, const std::string& anchor) {
  if (analysis.energy.empty() && analysis.library_references.empty()) return;
  doc.push_back(heading(3, "Power, energy and sustained roofs", anchor + "-energy"));
  if (!analysis.energy.empty()) {
    doc.push_back(paragraph(
        "Board power (NVML energy counter) while each roof's kernel ran, the energy per FLOP or "
        "byte it implies, and what the clock was held back by. Sustained: the same kernel under "
        "a long load, judged over its second half; a burst roof above its sustained one is what "
        "a short benchmark sees and a long training step does not."));
    std::vector<std::vector<std::string>> rows;
    for (const roofline::RoofEnergy& e : analysis.energy) {
      const std::string per = e.unit == "FLOP/s" ? "J/FLOP" : "J/B";
      std::vector<std::string> row{e.ceiling, format_si(e.measured, e.unit),
                                   format_si(e.power.watts, "W"), format_si(e.joules_per_unit, per),
                                   describe_clock_limits(e.power.clock_limits)};
      if (const auto& s = e.sustained)
        row.insert(row.end(), {format_si(s->measured, e.unit) + " over " + format_time(s->seconds),
                               format_number(e.sustained_ratio, hint::percent_1),
                               clock_text(s->sm_clock_hz) + ", " + format_si(s->power.watts, "W"),
                               format_si(e.sustained_joules_per_unit, per),
                               describe_clock_limits(s->power.clock_limits)});
      else
        row.insert(row.end(), {"-", "-", "-", "-", "-"});
      rows.push_back(std::move(row));
    }
    doc.push_back(table({"Roof", "Burst", "Power", "Energy", "Clock held by", "Sustained",
                         "Of burst", "Clock, power", "Energy", "Clock held by"},
                        std::move(rows), "energy"));
    doc.back().nowrap = {1, 2, 3, 5, 6, 7, 8};
  }
  if (!analysis.energy_roofs.empty()) {
    doc.push_back(chart(energy_roofline_chart(analysis.energy_roofs, r.run.machine.gpu.name),
                        anchor + "-energy.svg",
                        "Energy roofline: FLOP per joule against arithmetic intensity"));
  }
  if (!analysis.library_references.empty()) {
    doc.push_back(paragraph(
        "Library references (cuBLASLt GEMM) against the roof of their type, each quoted at the "
        "roof's clock (rate x roof clock / its own clock): a reference that moves between runs "
        "only with its clock stays put here."));
    std::vector<std::vector<std::string>> rows;
    for (const roofline::LibraryReference& l : analysis.library_references)
      rows.push_back({l.reference, format_si(l.measured, "FLOP/s"), clock_text(l.clock_hz), l.roof,
                      format_si(l.roof_measured, "FLOP/s"), clock_text(l.roof_clock_hz),
                      format_si(l.at_roof_clock, "FLOP/s"),
                      format_number(l.ratio, hint::percent_1)});
    doc.push_back(table({"Reference", "Measured", "At clock", "Roof", "Roof measured", "Roof clock",
                         "At the roof's clock", "Of roof"},
                        std::move(rows), "library"));
    doc.back().nowrap = {1, 2, 4, 5, 6, 7};
  }
}

// The time-based roofline of a sweep, one chart per compute roof (its time
// axes on that roof's P), and the points it could not draw (no HBM bytes, no
// time).
void complexity_section(std::vector<Block>& doc, const RunRecord& r,
                        const roofline::RunAnalysis& analysis, const roofline::SweepAnalysis& sa,
                        const std::string& prefix) {
  const std::string& sweep = sa.name;
  for (const roofline::RoofComplexity& roof : sa.per_roof) {
    const roofline::ComplexityChart& data = roof.chart;
    const auto drawn = static_cast<std::size_t>(
        std::count_if(data.points.begin(), data.points.end(),
                      [](const roofline::ComplexityPoint& p) { return p.drawable; }));
    if (drawn == 0 || data.peak <= 0) continue;
    const std::string roof_name = to_string(roof.roof);
    const std::string title = "Time-based roofline: " + sweep + ", points on the " + roof_name +
                              " roof (" + format_si(data.peak, "FLOP/s") + ")";
    const std::vector<std::string> parts = time_complexity_charts(r, analysis, roof, title);
    for (std::size_t k = 0; k < parts.size(); ++k)
      doc.push_back(
          chart(parts[k],
                prefix + "-complexity-" + file_name_part(roof_name) +
                    (k == 0 ? "" : "-part" + std::to_string(k + 1)) + ".svg",
                "Time-based roofline (complexity chart) of the " + std::to_string(drawn) +
                    " points of " + sweep + " whose work is mostly " + roof_name +
                    (parts.size() == 1 ? ""
                                       : " (part " + std::to_string(k + 1) + " of " +
                                             std::to_string(parts.size()) + ", on the same axes)") +
                    ", with HBM bytes; the right axis is W / P at the " + roof_name +
                    " roof. Each point is joined to where it would sit at the roof for "
                    "its measured time; the segment is the time lost to the roof"));
  }
  std::vector<std::string> left_out;
  for (const std::string& note : sa.complexity.notes)
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

// Per series of the sweep: its time, decomposition and Tensor-Core charts.
void series_charts(std::vector<Block>& doc, const roofline::RunAnalysis& analysis,
                   const std::vector<std::string>& anchors, const std::string& sweep) {
  for (std::size_t i = 0; i < analysis.series.size(); ++i) {
    const roofline::Series& s = analysis.series[i].series;
    if (s.sweep != sweep) continue;
    const bool tensor_work = std::any_of(
        s.points.begin(), s.points.end(),
        [](const roofline::SeriesPoint& sp) { return sp.bounds.tensor_share.value_or(0) > 0; });
    const std::string fixed_text = params_text(s.fixed);
    const std::string& file = anchors[i];
    doc.push_back(heading(4, s.name() + " against " + s.parameter, file));
    const std::string title = s.name() + ": time against " + s.parameter;
    doc.push_back(chart(time_vs_parameter_chart(s, title), file + ".svg",
                        title + " (" + fixed_text +
                            "): T_stream, T_call and T_graph with their "
                            "95% intervals, T_k and the bounds"));
    const std::string parts = s.name() + ": where the time goes, against " + s.parameter;
    doc.push_back(chart(time_decomposition_chart(s, parts), file + "-decomposition.svg",
                        parts + ": host overhead, device gaps, transfer, kernel time within and "
                                "lost to the roof"));
    if (tensor_work) {
      const std::string tc = s.name() + ": Tensor Cores against " + s.parameter;
      doc.push_back(chart(tensor_core_chart(s, tc), file + "-tensor.svg",
                          tc + ": share of the FLOPs and utilisation of the Tensor-Core roof"));
    } else {
      doc.push_back(paragraph("Tensor Cores do none of the FLOPs of " + s.name() + " (math " +
                              or_dash(s.math_mode) + "): no Tensor-Core chart."));
    }
  }
}

// The kernels the sweep ran, most traced time first.
void kernels_table(std::vector<Block>& doc, const std::vector<const Point*>& points,
                   const std::string& sweep) {
  struct KernelTotal {
    double seconds = 0;
    int points = 0;
  };
  std::map<std::string, KernelTotal> kernels;
  for (const Point* p : points) {
    std::set<std::string> seen;
    for (const KernelRecord& k : p->kernels) {
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
}

// One row per point, and one per analysed point of its measured times and the
// parts of T.
void point_tables(std::vector<Block>& doc, const std::vector<const Point*>& points,
                  const std::vector<const roofline::PointAnalysis*>& models,
                  const std::string& sweep) {
  const std::vector<std::string> keys = varying_keys(points);
  const std::string fixed_text = fixed_params(points, keys);
  std::vector<std::vector<std::string>> rows, times;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = *points[i];
    const roofline::PointBounds& b = models[i]->bounds;
    const roofline::Classification& c = models[i]->classification;
    const bool analysed = models[i]->analysed;
    std::string status = to_string(p.status);
    if (!p.reason.empty()) status += ": " + p.reason;
    std::string precision = p.precision + (p.math_mode.empty() ? "" : "/" + p.math_mode);
    const std::string params = or_dash(params_of(p, keys));
    rows.push_back(
        {std::to_string(p.seq), p.op + " " + precision, params,
         format_number(b.time_s, hint::time_part), format_number(b.kernel_s, hint::time_part),
         b.launches ? std::to_string(*b.launches) : "-",
         p.status == PointStatus::ok ? c.label() : "-", format_number(b.efficiency, hint::share),
         format_number(b.tensor_share, hint::share), format_number(b.headroom, hint::ratio),
         status});
    if (!analysed) continue;
    const roofline::Decomposition& d = c.parts;
    const std::string host =
        format_number(d.host_overhead_s, hint::time_part) + (d.separated ? "" : " (with gaps)");
    times.push_back({std::to_string(p.seq), params, roofline::format_time_stats(b.call),
                     roofline::format_time_stats(b.stream), roofline::format_time_stats(b.graph),
                     roofline::format_time_stats(b.issue), host,
                     d.separated ? format_number(d.device_gaps_s, hint::time_part) : "-",
                     format_number(d.transfer_s, hint::time_part),
                     format_number(d.within_roof_s, hint::time_part),
                     format_number(d.lost_to_roof_s, hint::time_part),
                     format_number(d.not_explained_s, hint::time_part), c.reason});
  }
  doc.push_back(table({"#", "Operator", "Parameters", "Time T", "Kernel time", "Launches", "Bound",
                       "Efficiency", "Tensor-Core share", "Headroom", "Status"},
                      std::move(rows), "point",
                      "Points of " + sweep + (fixed_text.empty() ? "" : "; fixed: " + fixed_text) +
                          ". T is T_stream where measured, else T_call."));
  // Numbers whole; the text columns and the class wrap (the class before its
  // unit or level), so the table fits A4.
  doc.back().nowrap = {0, 3, 4, 5, 7, 8, 9};
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
}

void sweep_section(std::vector<Block>& doc, const RunRecord& r,
                   const roofline::RunAnalysis& analysis, const roofline::SweepAnalysis& sa,
                   const std::string& anchor, std::size_t sweep_number) {
  const roofline::MachineRoofs& roofs = analysis.roofs;
  const std::string& sweep = sa.name;
  std::vector<const Point*> points;
  std::vector<const roofline::PointAnalysis*> models;  // parallel to points
  for (std::size_t i : sa.points) {
    points.push_back(&r.points[i]);
    models.push_back(&analysis.points[i]);
  }
  const std::string prefix = sweep_anchor(anchor, sweep_number, sweep);
  doc.push_back(heading(3, "Sweep " + sweep, prefix));

  const std::vector<PointSample> samples = point_samples(r, analysis, sa.points);
  if (!samples.empty()) {
    doc.push_back(chart(classic_roofline_chart(roofs, samples, "Hierarchical Roofline: " + sweep),
                        prefix + "-roofline.svg",
                        "Classic hierarchical roofline of the " + std::to_string(samples.size()) +
                            " measured points of " + sweep));
  }
  complexity_section(doc, r, analysis, sa, prefix);
  transfer_paragraph(doc, r, analysis, sweep);
  series_charts(doc, analysis, series_anchors(analysis, anchor), sweep);
  kernels_table(doc, points, sweep);
  point_tables(doc, points, models, sweep);
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

// How to read each kind of chart, and the time-based roofline read on one real
// point: the drawn point with the largest time T in the first run that has one.
void reading_guide(std::vector<Block>& doc, const std::vector<RunRecord>& runs,
                   const std::vector<roofline::RunAnalysis>& analyses) {
  doc.push_back(heading(2, "How to read this report", "reading-guide"));
  doc.push_back(paragraph(
      "Each run has a summary, its findings (what a reviewer should look at first, most time "
      "first, each linked to the charts of its series), the machine's measured roofs, then per "
      "sweep its charts and tables, and its provenance. The glossary at the end defines every "
      "quantity and class."));
  doc.push_back(list(
      {"Measured roofs: one row per roof, its measured rate against its theoretical peak, with "
       "the spread of its repeats as a bar; a roof well below its peak was held back (clock, "
       "power) or its kernel is not the best one.",
       "Bandwidth against working set: the rate of one read kernel as its data grows; the "
       "plateaus are L1, L2 and HBM, the drops sit at their sizes.",
       "Hierarchical roofline: FLOP/s against arithmetic intensity (FLOP per byte), one marker "
       "per point and memory level. A point below a roof runs slower than that roof allows; the "
       "lowest roof above the point's intensity is the one that bounds it.",
       "Time-based roofline: the same points by their work, FLOPs up and HBM bytes across, with "
       "time axes (seconds = FLOPs / P at the right, bytes / B at the top). Each point is drawn "
       "twice, joined by a segment: where its work sits (filled) and where a call at the roof "
       "would sit to take its measured time (open). The longer the segment, the more time is "
       "lost to the roof; a bar with caps across the run-time point is T's 95% interval. One "
       "chart per compute roof (the points whose work is mostly on it), "
       "so its right axis is that roof's P, with a panel per operator on shared axes.",
       "Time against batch: T_stream, T_call and T_graph with their 95% intervals as bands, "
       "T_k, and each bound as a line; where the times leave the bounds, time is lost.",
       "Where the time goes: one stacked bar per point of the measured parts of T (kernels "
       "within and lost to the roof, transfer, device gaps, host overhead), in seconds and as "
       "shares of T.",
       "Tensor Cores: their share of the FLOPs and their utilisation (T_tensor / T_k) along "
       "the batch.",
       "Energy roofline: FLOP per joule against arithmetic intensity, from the board's power "
       "while each roof ran."},
      false));
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const roofline::RunAnalysis& analysis = analyses[i];
    const roofline::SweepAnalysis* sweep = nullptr;
    const roofline::ComplexityPoint* best = nullptr;
    double total = 0;
    for (const roofline::SweepAnalysis& sa : analysis.sweeps)
      for (const roofline::ComplexityPoint& cp : sa.complexity.points) {
        if (!cp.drawable || sa.complexity.bandwidth <= 0) continue;
        total += cp.time_s;
        if (!best || cp.time_s > best->time_s) {
          best = &cp;
          sweep = &sa;
        }
      }
    if (!best) continue;
    const Point& p = runs[i].points[best->index];
    std::vector<const Point*> sweep_points;
    for (std::size_t k : sweep->points) sweep_points.push_back(&runs[i].points[k]);
    const roofline::PointAnalysis& pa = analysis.points[best->index];
    const double bandwidth = sweep->complexity.bandwidth;
    const double compute_s = best->flops / best->peak, memory_s = best->bytes / bandwidth;
    const double roof_s = best->time_s - best->lost_s;
    const std::string time_name = pa.bounds.time_source == roofline::TimeSource::none
                                      ? "T"
                                      : to_string(pa.bounds.time_source);
    doc.push_back(paragraph(
        "Reading the time-based roofline of " + sweep->name + " on its point #" +
        std::to_string(p.seq) + ", " + p.op + " " + p.precision + " " +
        params_of(p, varying_keys(sweep_points)) + ", the point of run " +
        std::to_string(run_number(runs[i].run, i + 1)) + " with the largest time (" +
        format_number(best->time_s / total, hint::share) +
        " of the time of its drawn points): its call does W = " + format_si(best->flops, "FLOP") +
        " and moves Q = " + format_si(best->bytes, "B") +
        " through HBM. At its own peak P = " + format_si(best->peak, "FLOP/s") +
        " the FLOPs would take W / P = " + format_time(compute_s) + "; at the HBM roof B = " +
        format_si(bandwidth, "B/s") + " the bytes take Q / B = " + format_time(memory_s) +
        ". The larger, " + format_time(roof_s) + ", is its roof time: " +
        (best->compute_side ? "the compute roof bounds it (its intensity W / Q = "
                            : "the HBM roof bounds it (its intensity W / Q = ") +
        format_si(best->intensity, "FLOP/B") +
        (best->compute_side ? " is at or above" : " is below") + " the balance P / B = " +
        format_si(best->peak / bandwidth, "FLOP/B") + "). It took " + time_name + " = " +
        format_time(best->time_s) + ", " + format_number(best->time_s / roof_s, hint::ratio) +
        " its roof time: the segment from its point to its run-time point is the " +
        format_time(best->lost_s) +
        " lost to the roof. Over every memory level and its "
        "launches the model calls it " +
        pa.classification.label() + ": " + pa.classification.reason + "."));
    break;
  }
}

// Every quantity and class the report names, from the model's own list.
void glossary_section(std::vector<Block>& doc) {
  doc.push_back(heading(2, "Glossary", "glossary"));
  std::vector<std::vector<std::string>> rows;
  for (const roofline::GlossaryEntry& e : roofline::glossary()) rows.push_back({e.term, e.meaning});
  doc.push_back(table({"Term", "Meaning"}, std::move(rows), "glossary"));
  doc.back().nowrap = {0};
}

}  // namespace

std::vector<Block> report_blocks(const std::vector<RunRecord>& runs, const std::string& notice) {
  std::vector<roofline::RunAnalysis> analyses;  // the model of each run, computed once
  for (const RunRecord& r : runs) analyses.push_back(roofline::analyze(r));
  std::vector<Block> doc;
  doc.push_back(heading(1, "timeroof report"));
  if (!notice.empty()) doc.push_back(note(notice));
  doc.push_back(paragraph("Why each operator takes the time it takes: " +
                          std::to_string(runs.size()) + " run(s), written by timeroof " +
                          kToolVersion + " (" + kGitSha + ") at " + utc_now_iso8601() + "."));
  doc.push_back(heading(2, "Contents"));
  doc.push_back(contents());
  reading_guide(doc, runs, analyses);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& r = runs[i];
    const roofline::RunAnalysis& analysis = analyses[i];
    const std::string anchor = "run" + std::to_string(i + 1);
    doc.push_back(heading(2,
                          "Run " + std::to_string(run_number(r.run, i + 1)) + ": " +
                              or_dash(r.run.machine.gpu.name) + ", " + or_dash(r.run.started_at),
                          anchor));
    summary_section(doc, r, anchor);
    model_section(doc, analysis, anchor);
    findings_section(doc, analysis, anchor);
    roof_findings_section(doc, analysis);
    roofs_section(doc, r, anchor);
    energy_section(doc, r, analysis, anchor);
    std::size_t sweep_number = 0;
    for (const roofline::SweepAnalysis& sweep : analysis.sweeps)
      sweep_section(doc, r, analysis, sweep, anchor, ++sweep_number);
    if (!r.trace.empty())  // a profiled program (`timeroof profile`)
      profile_section(doc, roofline::analyze_profile(r.trace, roofline::profile_options(r)),
                      profile_provenance(r), anchor + "-profile");
    provenance_section(doc, r, anchor);
  }
  glossary_section(doc);
  return doc;
}

}  // namespace timeroof::plots::detail
