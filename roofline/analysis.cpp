#include "roofline/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/json_io.hpp"
#include "timeroof/version.hpp"

namespace timeroof::roofline {
namespace {

using nlohmann::json;

// A number, or null where it is missing or not finite (JSON has no infinity).
json num(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

json roof_json(const Roof& r) {
  return {{"value", num(r.value)},
          {"source", to_string(r.source)},
          {"ceiling", r.ceiling},
          {"note", r.note}};
}

}  // namespace

json roofs_json(const MachineRoofs& roofs) {
  json compute = json::object(), memory = json::object(), transfer = json::object();
  for (PrecisionClass p : kAllPrecisionClasses) compute[to_string(p)] = roof_json(roofs.peak(p));
  for (Level l : kAllLevels) memory[to_string(l)] = roof_json(roofs.bandwidth(l));
  for (TransferDirection d : kAllTransferDirections)
    for (HostMemory h : kAllHostMemories)
      transfer[to_string(d)][to_string(h)] = roof_json(roofs.transfer(d, h));
  return {{"compute", compute},
          {"memory", memory},
          {"launch", roof_json(roofs.launch)},
          {"transfer", transfer}};
}

json classification_json(const Classification& c) {
  return {
      {"label", c.label()},        {"bottleneck", to_string(c.bottleneck)},
      {"rule", to_string(c.rule)}, {"level", c.level ? json(to_string(*c.level)) : json(nullptr)},
      {"unit", to_string(c.unit)}, {"reason", c.reason}};
}

namespace {

json transfer_json(const PointBounds& b) {
  json j = {{"host", to_string(b.transfer_host)}, {"t_s", b.t_xfer}};
  for (const TransferBounds& x : b.transfers)
    j[to_string(x.direction)] = {{"bytes", num(x.bytes)},
                                 {"bandwidth", num(x.bandwidth)},
                                 {"ceiling", x.ceiling},
                                 {"time_s", num(x.time_s)}};
  return j;
}

json level_json(const LevelBounds& lb) {
  return {{"bytes", num(lb.bytes)},           {"bandwidth", num(lb.bandwidth)},
          {"time_s", num(lb.time_s)},         {"intensity", num(lb.intensity)},
          {"attainable", num(lb.attainable)}, {"used", !lb.excluded && lb.time_s.has_value()},
          {"excluded", lb.excluded},          {"excluded_reason", lb.excluded_reason}};
}

json kernel_bound_json(const KernelBound& k) {
  json work = json::object(), bytes = json::object(), t_mem = json::object();
  for (PrecisionClass p : kAllPrecisionClasses)
    if (k.work[static_cast<std::size_t>(p)] > 0)
      work[to_string(p)] = k.work[static_cast<std::size_t>(p)];
  for (Level l : kAllLevels) {
    bytes[to_string(l)] = num(k.bytes[static_cast<std::size_t>(l)]);
    t_mem[to_string(l)] = num(k.t_mem[static_cast<std::size_t>(l)]);
  }
  return {{"name", k.name},
          {"duration_s", k.duration_s},
          {"work", work},
          {"t_compute_s", k.t_compute},
          {"bytes", bytes},
          {"t_mem_s", t_mem},
          {"l1_excluded", k.l1_excluded},
          {"t_bound_s", k.t_bound},
          {"limiting", k.limiting}};
}

// A measured time in the export's form (core/json_io.hpp): a missing interval is null.
json stats_json(const std::optional<TimeStats>& t) {
  return t ? json(*t) : json(nullptr);
}

const char* to_text(Separation s) {
  switch (s) {
    case Separation::apart:
      return "apart";
    case Separation::overlapping:
      return "overlapping";
    case Separation::unknown:
      return "unknown";
  }
  return "?";
}

json decomposition_json(const Decomposition& d) {
  return {{"time_s", d.time_s},
          {"time_source", to_string(d.time_source)},
          {"separated", d.separated},
          {"host_overhead_s", d.host_overhead_s},
          {"device_gaps_s", d.device_gaps_s},
          {"transfer_s", d.transfer_s},
          {"kernel_s", d.kernel_s},
          {"within_roof_s", d.within_roof_s},
          {"lost_to_roof_s", d.lost_to_roof_s},
          {"kernel_overlap_s", d.kernel_overlap_s},
          {"not_explained_s", d.not_explained_s},
          {"graph_above_time_s", d.graph_above_time_s},
          {"kernels_above_device_s", d.kernels_above_device_s},
          {"graph_vs_time", to_text(d.graph_vs_time)},
          {"call_premium_s", num(d.call_premium_s)},
          {"stream_above_call_s", d.stream_above_call_s},
          {"stream_vs_call", to_text(d.stream_vs_call)},
          {"notes", d.notes}};
}

json point_json(const Point& p, const PointAnalysis& a) {
  json j = {{"sweep", p.sweep},
            {"seq", p.seq},
            {"op", p.op},
            {"precision", p.precision},
            {"math_mode", p.math_mode},
            {"algorithm", p.algorithm},
            {"params", p.params},
            {"status", to_string(p.status)},
            {"reason", p.reason},
            {"analysed", a.analysed}};
  // A sweep's --metrics: the stored values, the operator's (as its total was
  // formed) and each kernel's; absent without --metrics, so the document is unchanged.
  if (p.details.contains("counters") && p.details["counters"].contains("extra_metrics")) {
    json extra = json::object();
    for (const json& m : p.details["counters"]["extra_metrics"]) {
      const std::string name = m.value("name", std::string());
      json per_kernel = json::array();
      for (const KernelRecord& k : p.kernels) {
        const auto v = k.metrics.find(name);
        per_kernel.push_back(v == k.metrics.end() ? json(nullptr) : json(v->second));
      }
      const auto total = p.counters.find(name);
      extra[name] = {{"total", total == p.counters.end() ? json(nullptr) : json(total->second)},
                     {"total_is", m.value("total", std::string())},
                     {"per_kernel", per_kernel}};
    }
    j["extra_metrics"] = std::move(extra);
  }
  if (!a.analysed) return j;
  const PointBounds& b = a.bounds;
  const Classification& c = a.classification;
  json work = json::object(), compute = json::object(), levels = json::object();
  for (PrecisionClass p_ : kAllPrecisionClasses) {
    const std::size_t i = static_cast<std::size_t>(p_);
    if (b.work[i] > 0) work[to_string(p_)] = b.work[i];
    if (b.compute_s[i] > 0) compute[to_string(p_)] = b.compute_s[i];
  }
  for (const LevelBounds& lb : b.levels) levels[to_string(lb.level)] = level_json(lb);
  json kernels = json::array();
  for (const KernelBound& k : b.kernel_bounds) kernels.push_back(kernel_bound_json(k));
  j["work_source"] = to_string(b.work_source);
  j["bytes_source"] = to_string(b.bytes_source);
  j["times"] = {{"call", stats_json(b.call)},
                {"stream", stats_json(b.stream)},
                {"graph", stats_json(b.graph)},
                {"issue", stats_json(b.issue)},
                {"graph_unavailable", b.graph_unavailable}};
  j["time_s"] = num(b.time_s);
  j["time_source"] = to_string(b.time_source);
  j["kernel_s"] = num(b.kernel_s);
  j["kernel_low_s"] = num(b.kernel_low_s);
  j["kernel_high_s"] = num(b.kernel_high_s);
  j["kernel_busy_s"] = num(b.kernel_busy_s);
  j["launches"] = b.launches ? json(*b.launches) : json(nullptr);
  j["transfer_measured_s"] = num(b.transfer_measured_s);
  j["work"] = work;
  j["total_work"] = b.total_work;
  j["t_roof_s"] = b.t_roof;
  j["t_kernel_roof_s"] = b.t_kernel_roof;
  j["t_compute_s"] = b.t_compute;
  j["t_cuda_s"] = b.t_cuda;
  j["t_tensor_s"] = b.t_tensor;
  j["compute_s"] = compute;
  j["levels"] = levels;
  j["t_launch_s"] = num(b.t_launch);
  j["t_xfer_s"] = b.t_xfer;
  j["transfer"] = transfer_json(b);
  j["limiting_roof"] = b.limiting_roof;
  j["peak_effective"] = num(b.peak_effective);
  j["achieved"] = num(b.achieved);
  j["achieved_low"] = num(b.achieved_low);
  j["achieved_high"] = num(b.achieved_high);
  j["attainable"] = num(b.attainable);
  j["efficiency"] = num(b.efficiency);
  j["tensor_share"] = num(b.tensor_share);
  j["tensor_utilisation"] = num(b.tensor_utilisation);
  j["class"] = classification_json(c);
  j["decomposition"] = decomposition_json(c.parts);
  j["lower_bound"] = {{"t_s", b.t_lower_bound},
                      {"scope", to_string(b.lower_bound_scope)},
                      {"operator_s", b.t_lower_bound_operator},
                      {"per_kernel_s", num(b.t_lower_bound_per_kernel)},
                      {"kernels", kernels}};
  j["headroom"] = num(b.headroom);
  j["kernel_headroom"] = num(b.kernel_headroom);
  j["notes"] = b.notes;
  return j;
}

json fit_json(const LinearFit& f) {
  return {{"n", f.n},
          {"a_s", f.a},
          {"a_low_s", num(f.a_low)},
          {"a_high_s", num(f.a_high)},
          {"c_s", f.c},
          {"c_low_s", num(f.c_low)},
          {"c_high_s", num(f.c_high)},
          {"flat", f.flat},
          {"flat_within_s", f.flat_within},
          {"r2", num(f.r2)},
          {"spread", f.spread},
          {"max_rel_residual", f.max_rel_residual},
          {"x_min", f.x_min},
          {"x_max", f.x_max},
          {"knee", num(f.knee)},
          {"knee_note", f.knee_note},
          {"iterations", f.iterations}};
}

json series_json(const SeriesAnalysis& sa, const RunRecord& record) {
  const Series& s = sa.series;
  json points = json::array(), segments = json::array();
  for (const SeriesPoint& p : s.points)
    points.push_back(
        {{"x", p.x}, {"seq", record.points.at(p.index).seq}, {"label", p.classification.label()}});
  for (const ClassSegment& g : sa.fit.segments)
    segments.push_back({{"x_first", g.x_first},
                        {"x_last", g.x_last},
                        {"label", g.label},
                        {"points", g.last - g.first + 1}});
  return {{"name", s.name()},
          {"sweep", s.sweep},
          {"op", s.op},
          {"precision", s.precision},
          {"math_mode", s.math_mode},
          {"parameter", s.parameter},
          {"fixed", s.fixed},
          {"points", points},
          {"fit",
           {{"time_source", to_string(sa.fit.time_source)},
            {"time", fit_json(sa.fit.time)},
            {"graph", sa.fit.graph ? fit_json(*sa.fit.graph) : json(nullptr)},
            {"kernel", sa.fit.kernel ? fit_json(*sa.fit.kernel) : json(nullptr)}}},
          {"segments", segments}};
}

json finding_json(const Finding& f, std::size_t rank) {
  return {{"rank", rank},
          {"explained_s", f.explained_s},
          {"share", f.share},
          {"text", f.text},
          {"series", f.series},
          {"sweep", f.sweep},
          {"parameter", f.parameter},
          {"x_first", f.x_first},
          {"x_last", f.x_last},
          {"label", f.label},
          {"points", f.points}};
}

json options_json(const FindingsOptions& o) {
  const Thresholds& t = o.series.thresholds;
  const BoundsOptions& b = o.series.bounds;
  return {{"parameter", o.series.parameter},
          {"min_series_points", o.series.min_points},
          {"thresholds",
           {{"transfer_fraction", t.transfer_fraction},
            {"issue_ratio", t.issue_ratio},
            {"launch_fraction", t.launch_fraction},
            {"roof_fraction", t.roof_fraction}}},
          {"bounds",
           {{"transfers_serial", b.transfers_serial},
            {"l1_min_fraction", b.l1_min_fraction},
            {"per_kernel_lower_bound", b.per_kernel_lower_bound}}},
          {"fit",
           {{"huber_k", o.fit.huber_k},
            {"min_knee_r2", o.fit.min_knee_r2},
            {"min_fixed_fraction", o.fit.min_fixed_fraction}}},
          {"findings",
           {{"graph_min_gain", o.graph_min_gain},
            {"pass_tolerance", o.pass_tolerance},
            {"redundant_min_ratio", o.redundant_min_ratio},
            {"tile_padding_min_ratio", o.tile_padding_min_ratio},
            {"switch_min_step", o.switch_min_step},
            {"helper_min_share", o.helper_min_share},
            {"outlier_min_residual", o.outlier_min_residual},
            {"roof_max_of_peak", o.roof_max_of_peak},
            {"roof_max_spread", o.roof_max_spread}}}};
}

// The class with the most work; the first of equals.
std::optional<PrecisionClass> main_precision(const PointBounds& b) {
  std::optional<PrecisionClass> out;
  double most = 0;
  for (PrecisionClass p : kAllPrecisionClasses) {
    if (b.work[static_cast<std::size_t>(p)] > most) {
      most = b.work[static_cast<std::size_t>(p)];
      out = p;
    }
  }
  return out;
}

}  // namespace

bool analysed_status(PointStatus status) {
  return status == PointStatus::ok || status == PointStatus::counters_unavailable;
}

RunAnalysis analyze(const RunRecord& record, const FindingsOptions& options) {
  RunAnalysis a;
  a.roofs = machine_roofs(record.run.machine);
  a.energy = roof_energy(record.run.machine);
  a.energy_roofs = energy_roofs(a.energy);
  a.library_references = library_references(record.run.machine);
  for (std::size_t i = 0; i < record.points.size(); ++i) {
    PointAnalysis pa;
    pa.index = i;
    pa.analysed = analysed_status(record.points[i].status);
    if (pa.analysed) {
      pa.bounds = point_bounds(record.points[i], a.roofs, options.series.bounds);
      pa.classification = classify(pa.bounds, options.series.thresholds);
      pa.main_precision = main_precision(pa.bounds);
    }
    a.points.push_back(std::move(pa));
  }
  for (std::size_t i = 0; i < record.points.size(); ++i) {
    const std::string& sweep = record.points[i].sweep;
    auto it = std::find_if(a.sweeps.begin(), a.sweeps.end(),
                           [&](const SweepAnalysis& s) { return s.name == sweep; });
    if (it == a.sweeps.end())
      it = a.sweeps.insert(a.sweeps.end(), SweepAnalysis{sweep, {}, {}, {}});
    it->points.push_back(i);
  }
  for (SweepAnalysis& s : a.sweeps) {
    std::vector<BoundedPoint> bounded;
    for (std::size_t i : s.points) bounded.push_back({i, &record.points[i], &a.points[i].bounds});
    s.complexity = complexity_chart(bounded, a.roofs);
    for (PrecisionClass roof : kAllPrecisionClasses) {
      std::vector<BoundedPoint> on_roof;
      for (const BoundedPoint& bp : bounded)
        if (a.points[bp.index].main_precision == roof) on_roof.push_back(bp);
      if (on_roof.empty()) continue;
      ComplexityOptions options_on_roof;
      options_on_roof.precision = roof;
      s.per_roof.push_back({roof, complexity_chart(on_roof, a.roofs, options_on_roof)});
    }
  }
  // Series, fits and findings from the per-point numbers above, not recomputed.
  const PointModel point_model = [&](std::size_t i) {
    return std::make_pair(a.points[i].bounds, a.points[i].classification);
  };
  GroupedSeries grouped = group_series_and_lone(record.points, point_model, options.series);
  std::vector<Series>& series = grouped.series;
  std::vector<SeriesFit> fits;
  for (const Series& s : series) fits.push_back(fit_series(s, options.fit));
  a.findings = series_findings(record.points, series, fits, a.roofs, options);
  merge_findings(a.findings, lone_point_findings(record.points, grouped.lone, a.roofs, options));
  a.roof_findings = roof_findings(record.run.machine, options);
  for (std::size_t i = 0; i < series.size(); ++i)
    a.series.push_back({std::move(series[i]), std::move(fits[i])});
  a.model = analyze_model(record, a.points);
  return a;
}

namespace {

json optional_json(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

json roof_energy_json(const RunAnalysis& analysis) {
  json roofs = json::array();
  for (const RoofEnergy& e : analysis.energy) {
    roofs.push_back({{"ceiling", e.ceiling},
                     {"unit", e.unit},
                     {"measured", e.measured},
                     {"power", e.power},
                     {"joules_per_unit", optional_json(e.joules_per_unit)},
                     {"sustained", e.sustained ? json(*e.sustained) : json(nullptr)},
                     {"sustained_ratio", optional_json(e.sustained_ratio)},
                     {"sustained_joules_per_unit", optional_json(e.sustained_joules_per_unit)}});
  }
  json lines = json::array();
  for (const EnergyRoof& r : analysis.energy_roofs)
    lines.push_back({{"compute", r.compute},
                     {"memory", r.memory},
                     {"joules_per_flop", r.joules_per_flop},
                     {"joules_per_byte", r.joules_per_byte},
                     {"balance", r.balance}});
  return {{"roofs", roofs}, {"energy_roofs", lines}};
}

json library_references_json(const std::vector<LibraryReference>& references) {
  json out = json::array();
  for (const LibraryReference& r : references)
    out.push_back({{"reference", r.reference},
                   {"roof", r.roof},
                   {"measured", r.measured},
                   {"clock_hz", optional_json(r.clock_hz)},
                   {"roof_measured", r.roof_measured},
                   {"roof_clock_hz", optional_json(r.roof_clock_hz)},
                   {"at_roof_clock", optional_json(r.at_roof_clock)},
                   {"ratio", r.ratio}});
  return out;
}

}  // namespace

nlohmann::json analysis_json(const RunRecord& record, const RunAnalysis& analysis) {
  const Run& run = record.run;
  json points = json::array(), series = json::array(), found = json::array();
  for (const PointAnalysis& pa : analysis.points)
    points.push_back(point_json(record.points.at(pa.index), pa));
  for (const SeriesAnalysis& sa : analysis.series) series.push_back(series_json(sa, record));
  for (std::size_t i = 0; i < analysis.findings.size(); ++i)
    found.push_back(finding_json(analysis.findings[i], i + 1));
  json roof_found = json::array();
  for (const RoofFinding& f : analysis.roof_findings)
    roof_found.push_back({{"ceiling", f.ceiling},
                          {"label", f.label},
                          {"value", f.value},
                          {"limit", f.limit},
                          {"text", f.text}});
  json out = {{"run",
               {{"uuid", run.uuid},
                {"status", run.status},
                {"started_at", run.started_at},
                {"command_line", run.command_line},
                {"tool_version", run.tool_version},
                {"git_sha", run.git_sha},
                {"host", run.host},
                {"gpu", run.machine.gpu.name},
                {"chip", run.machine.gpu.chip}}},
              {"roofs", roofs_json(analysis.roofs)},
              {"roof_energy", roof_energy_json(analysis)},
              {"library_references", library_references_json(analysis.library_references)},
              {"points", points},
              {"series", series},
              {"findings", found},
              {"roof_findings", roof_found}};
  if (analysis.model) out["model"] = model_json(*analysis.model);
  return out;
}

nlohmann::json analysis_document(const std::vector<RunRecord>& records,
                                 const FindingsOptions& options) {
  json runs = json::array();
  for (const RunRecord& r : records) runs.push_back(analysis_json(r, analyze(r, options)));
  return {{"format", kAnalysisFormat},
          {"schema_version", kAnalysisSchemaVersion},
          {"analysed_by", std::string("timeroof ") + kToolVersion + " (" + kGitSha + ")"},
          {"options", options_json(options)},
          {"runs", runs}};
}

}  // namespace timeroof::roofline
