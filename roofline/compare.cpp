#include "roofline/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>

#include "core/vocabulary.hpp"
#include "roofline/analysis.hpp"
#include "roofline/machine_roofs.hpp"

namespace timeroof::roofline {

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::better:
      return "better";
    case Verdict::same:
      return "same";
    case Verdict::worse:
      return "worse";
  }
  return "same";
}

Ratio ratio_of(double base, double base_half_width, double other, double other_half_width) {
  Ratio r;
  r.value = other / base;
  // z = 1.96 for each side's own 95% interval: their log-widths add in quadrature.
  const double a = std::log1p(std::max(0.0, base_half_width));
  const double b = std::log1p(std::max(0.0, other_half_width));
  const double width = std::sqrt(a * a + b * b);
  r.low = r.value * std::exp(-width);
  r.high = r.value * std::exp(width);
  return r;
}

Verdict verdict_of(const Ratio& ratio, bool lower_is_better, double threshold) {
  const double up = 1 + threshold, down = 1 / (1 + threshold);
  const bool above = ratio.low > up, below = ratio.high < down;
  if (lower_is_better) return above ? Verdict::worse : below ? Verdict::better : Verdict::same;
  return below ? Verdict::worse : above ? Verdict::better : Verdict::same;
}

int Comparison::worse_count() const {
  int n = 0;
  for (const RoofComparison& r : roofs) n += r.verdict == Verdict::worse;
  for (const PointComparison& p : points) n += p.verdict == Verdict::worse;
  return n;
}

namespace {

// A point's identity on both sides: its operator and parameters (an object's
// keys are sorted, so equal parameters print alike).
std::string point_key(const Point& point) {
  return point.op + " " + point.params.dump();
}

// Half the width of a time's 95% interval over its median; half the spread
// where an older run has no interval; 0 where neither is known.
double half_width(const std::optional<TimeStats>& stats) {
  if (!stats) return 0;
  if (const auto ci = stats->relative_ci()) return *ci;
  return stats->spread / 2;
}

struct SidePoint {
  const RunRecord* record = nullptr;
  const Point* point = nullptr;
  const PointAnalysis* analysis = nullptr;
};

// One side: its runs analysed once, its roofs and its points by identity.
struct Side {
  std::vector<RunAnalysis> analyses;  // one per run
  std::vector<const Ceiling*> ceilings;
  std::map<std::string, const Ceiling*> ceiling_by_name;
  std::vector<std::string> point_order;
  std::map<std::string, SidePoint> points;
  std::optional<MachineRoofs> roofs;  // of the first run with ceilings
  const RunRecord* first = nullptr;

  explicit Side(const std::vector<RunRecord>& records) {
    analyses.reserve(records.size());
    for (const RunRecord& record : records) {
      if (!first) first = &record;
      analyses.push_back(analyze(record));
      if (!record.run.machine.ceilings.empty() && !roofs) {
        roofs = analyses.back().roofs;
        first = &record;
      }
      for (const Ceiling& c : record.run.machine.ceilings) {
        if (ceiling_by_name.emplace(c.name, &c).second) ceilings.push_back(&c);
      }
      for (std::size_t i = 0; i < record.points.size(); ++i) {
        const Point& p = record.points[i];
        const std::string key = point_key(p);
        if (points.count(key)) continue;
        points[key] = {&record, &p, &analyses.back().points[i]};
        point_order.push_back(key);
      }
    }
  }
};

// "NVIDIA H200 (run 3)", "NVIDIA H200 (runs 3,4)"; the GPU alone for runs
// read from a file (id 0).
std::string label_of(const std::vector<RunRecord>& records) {
  if (records.empty()) return "(no run)";
  std::string ids;
  for (const RunRecord& r : records) {
    if (r.run.id == 0) continue;
    ids += (ids.empty() ? "" : ",") + std::to_string(r.run.id);
  }
  const std::string& gpu = records.front().run.machine.gpu.name;
  const std::string runs =
      ids.empty() ? "" : (ids.find(',') == std::string::npos ? "run " : "runs ") + ids;
  if (gpu.empty()) return runs.empty() ? "(unnamed run)" : runs;
  return runs.empty() ? gpu : gpu + " (" + runs + ")";
}

std::string clock_text(const std::optional<double>& hz) {
  if (!hz) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f MHz", *hz / 1e6);
  return text;
}

std::vector<ProvenanceChange> provenance_changes(const RunRecord& base, const RunRecord& other) {
  const GpuInfo& a = base.run.machine.gpu;
  const GpuInfo& b = other.run.machine.gpu;
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> fields = {
      {"gpu", {a.name, b.name}},
      {"driver", {a.versions.driver, b.versions.driver}},
      {"cuda_runtime", {a.versions.cuda_runtime, b.versions.cuda_runtime}},
      {"cudnn", {a.versions.cudnn, b.versions.cudnn}},
      {"cublas", {a.versions.cublas, b.versions.cublas}},
      {"cupti", {a.versions.cupti, b.versions.cupti}},
      {"sm_clock_max", {clock_text(a.sm_clock_max_hz), clock_text(b.sm_clock_max_hz)}},
      {"mem_clock_max", {clock_text(a.mem_clock_max_hz), clock_text(b.mem_clock_max_hz)}},
      {"tool_version", {base.run.tool_version, other.run.tool_version}},
      {"git_sha", {base.run.git_sha, other.run.git_sha}},
  };
  std::vector<ProvenanceChange> changes;
  for (const auto& [field, values] : fields)
    if (values.first != values.second) changes.push_back({field, values.first, values.second});
  return changes;
}

// The roof that explains a class, and whether lower is better: the memory
// level's bandwidth, the compute roof of the point's main precision class, the
// launch cost; nullopt for other classes.
struct ExplainingRoof {
  std::string name;
  double base = 0;
  double other = 0;
  bool lower_is_better = false;
};

std::optional<ExplainingRoof> explaining_roof(const PointAnalysis& point, const MachineRoofs& base,
                                              const MachineRoofs& other) {
  const Classification& c = point.classification;
  auto pick = [](const Roof& a, const Roof& b, std::string name,
                 bool lower) -> std::optional<ExplainingRoof> {
    if (!a.value || !b.value || *a.value <= 0 || *b.value <= 0) return std::nullopt;
    return ExplainingRoof{std::move(name), *a.value, *b.value, lower};
  };
  if (c.bottleneck == Bottleneck::memory_bound && c.level)
    return pick(base.bandwidth(*c.level), other.bandwidth(*c.level),
                std::string(to_string(*c.level)) + " roof", false);
  if (c.bottleneck == Bottleneck::compute_bound) {
    const auto& t = point.bounds.compute_s;
    const auto main = static_cast<std::size_t>(std::max_element(t.begin(), t.end()) - t.begin());
    return pick(base.compute[main], other.compute[main],
                std::string(to_string(kAllPrecisionClasses[main])) + " roof", false);
  }
  if (c.bottleneck == Bottleneck::launch_bound)
    return pick(base.launch, other.launch, "launch cost", true);
  return std::nullopt;
}

// "batch 1-256" where the group's points share an integer batch axis.
std::string batch_range(const std::vector<const PointComparison*>& group) {
  long low = 0, high = 0;
  bool any = false;
  for (const PointComparison* p : group) {
    const auto found = p->params.find("batch");
    if (found == p->params.end() || !found->is_number_integer()) return "";
    const long b = found->get<long>();
    low = any ? std::min(low, b) : b;
    high = any ? std::max(high, b) : b;
    any = true;
  }
  if (!any) return "";
  return low == high ? "batch " + std::to_string(low)
                     : "batch " + std::to_string(low) + "-" + std::to_string(high);
}

std::string times_text(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", x);
  return text;
}

// One finding per group of matched points sharing sweep, operator, precision and
// both classes, largest total time difference first.
std::vector<std::string> findings_of(const Comparison& comparison,
                                     const std::vector<const PointAnalysis*>& base_analyses,
                                     const std::optional<MachineRoofs>& base_roofs,
                                     const std::optional<MachineRoofs>& other_roofs) {
  struct Group {
    std::vector<const PointComparison*> points;
    const PointAnalysis* first_base = nullptr;
    double log_ratio_sum = 0;
    double time_difference = 0;
  };
  std::map<std::string, Group> groups;
  std::vector<std::string> order;
  for (std::size_t i = 0; i < comparison.points.size(); ++i) {
    const PointComparison& p = comparison.points[i];
    const std::string key =
        p.sweep + "|" + p.op + "|" + p.precision + "|" + p.base_class + "|" + p.other_class;
    auto [it, inserted] = groups.try_emplace(key);
    if (inserted) {
      order.push_back(key);
      it->second.first_base = base_analyses[i];
    }
    it->second.points.push_back(&p);
    it->second.log_ratio_sum += std::log(p.ratio.value);
    it->second.time_difference += std::fabs(p.other_time_s - p.base_time_s);
  }
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return groups[a].time_difference > groups[b].time_difference;
  });
  std::vector<std::string> findings;
  for (const std::string& key : order) {
    const Group& g = groups[key];
    const PointComparison& p = *g.points.front();
    // Geometric mean of T_other / T_base: below 1, the other side is faster.
    const double ratio = std::exp(g.log_ratio_sum / static_cast<double>(g.points.size()));
    const double speedup = 1 / ratio;
    std::string text =
        comparison.other_label + " is " +
        (speedup >= 1 ? times_text(speedup) + " faster" : times_text(ratio) + " slower") + " on " +
        p.sweep + " " + p.op + " " + p.precision + " (" + std::to_string(g.points.size()) +
        " point(s)";
    const std::string range = batch_range(g.points);
    text += (range.empty() ? "" : ", " + range) + "): ";
    if (p.base_class == p.other_class) {
      text += p.base_class + " on both";
      if (base_roofs && other_roofs && g.first_base) {
        if (const auto roof = explaining_roof(*g.first_base, *base_roofs, *other_roofs))
          text += ", and its " + roof->name + " is " + times_text(roof->other / roof->base);
      }
    } else {
      text += p.base_class + " on " + comparison.base_label + ", " + p.other_class + " on " +
              comparison.other_label;
    }
    findings.push_back(text + ".");
  }
  return findings;
}

}  // namespace

Comparison compare_runs(const std::vector<RunRecord>& base, const std::vector<RunRecord>& other,
                        const CompareOptions& options) {
  Comparison c;
  c.options = options;
  c.base_label = options.base_label.empty() ? label_of(base) : options.base_label;
  c.other_label = options.other_label.empty() ? label_of(other) : options.other_label;
  const Side a(base), b(other);
  if (a.first && b.first) c.provenance = provenance_changes(*a.first, *b.first);

  for (const Ceiling* ceiling : a.ceilings) {
    const auto found = b.ceiling_by_name.find(ceiling->name);
    if (found == b.ceiling_by_name.end()) {
      c.roofs_only_in_base.push_back(ceiling->name);
      continue;
    }
    const Ceiling& o = *found->second;
    if (ceiling->measured <= 0 || o.measured <= 0) continue;
    RoofComparison r;
    r.name = ceiling->name;
    r.unit = ceiling->unit;
    r.base = ceiling->measured;
    r.other = o.measured;
    r.lower_is_better = ceiling->unit == "s";
    // A roof's spread is (max - min) / median over its repeats: half of it as the width.
    r.ratio = ratio_of(r.base, ceiling->spread / 2, r.other, o.spread / 2);
    r.verdict = verdict_of(r.ratio, r.lower_is_better, options.threshold);
    c.roofs.push_back(r);
  }
  for (const Ceiling* ceiling : b.ceilings)
    if (!a.ceiling_by_name.count(ceiling->name)) c.roofs_only_in_other.push_back(ceiling->name);

  std::vector<const PointAnalysis*> base_analyses;  // parallel to c.points
  for (const std::string& key : a.point_order) {
    const SidePoint& x = a.points.at(key);
    const auto found = b.points.find(key);
    if (found == b.points.end()) {
      c.points_only_in_base.push_back(key);
      continue;
    }
    const SidePoint& y = found->second;
    const PointBounds& xb = x.analysis->bounds;
    const PointBounds& yb = y.analysis->bounds;
    if (!x.analysis->analysed || !y.analysis->analysed || !xb.time_s || !yb.time_s ||
        *xb.time_s <= 0 || *yb.time_s <= 0) {
      c.points_not_timed.push_back(key);
      continue;
    }
    PointComparison p;
    p.sweep = x.point->sweep;
    p.op = x.point->op;
    p.params = x.point->params;
    p.precision = x.point->precision;
    p.base_seq = x.point->seq;
    p.other_seq = y.point->seq;
    p.base_time_s = *xb.time_s;
    p.other_time_s = *yb.time_s;
    const auto& xs = xb.time_source == TimeSource::stream ? xb.stream : xb.call;
    const auto& ys = yb.time_source == TimeSource::stream ? yb.stream : yb.call;
    p.ratio = ratio_of(p.base_time_s, half_width(xs), p.other_time_s, half_width(ys));
    p.base_class = x.analysis->classification.label();
    p.other_class = y.analysis->classification.label();
    p.verdict = verdict_of(p.ratio, true, options.threshold);
    c.points.push_back(std::move(p));
    base_analyses.push_back(x.analysis);
  }
  for (const std::string& key : b.point_order)
    if (!a.points.count(key)) c.points_only_in_other.push_back(key);

  c.findings = findings_of(c, base_analyses, a.roofs, b.roofs);
  return c;
}

nlohmann::json comparison_json(const Comparison& c) {
  auto ratio = [](const Ratio& r) {
    return nlohmann::json{{"value", r.value}, {"low", r.low}, {"high", r.high}};
  };
  nlohmann::json provenance = nlohmann::json::array();
  for (const ProvenanceChange& p : c.provenance)
    provenance.push_back({{"field", p.field}, {"base", p.base}, {"other", p.other}});
  nlohmann::json roofs = nlohmann::json::array();
  for (const RoofComparison& r : c.roofs)
    roofs.push_back({{"name", r.name},
                     {"unit", r.unit},
                     {"base", r.base},
                     {"other", r.other},
                     {"ratio", ratio(r.ratio)},
                     {"lower_is_better", r.lower_is_better},
                     {"verdict", to_string(r.verdict)}});
  nlohmann::json points = nlohmann::json::array();
  for (const PointComparison& p : c.points)
    points.push_back({{"sweep", p.sweep},
                      {"op", p.op},
                      {"params", p.params},
                      {"precision", p.precision},
                      {"base_seq", p.base_seq},
                      {"other_seq", p.other_seq},
                      {"base_time_s", p.base_time_s},
                      {"other_time_s", p.other_time_s},
                      {"ratio", ratio(p.ratio)},
                      {"base_class", p.base_class},
                      {"other_class", p.other_class},
                      {"verdict", to_string(p.verdict)}});
  return {{"format", kComparisonFormat},
          {"schema_version", kComparisonSchemaVersion},
          {"base", c.base_label},
          {"other", c.other_label},
          {"threshold", c.options.threshold},
          {"provenance", provenance},
          {"roofs", roofs},
          {"roofs_only_in_base", c.roofs_only_in_base},
          {"roofs_only_in_other", c.roofs_only_in_other},
          {"points", points},
          {"points_only_in_base", c.points_only_in_base},
          {"points_only_in_other", c.points_only_in_other},
          {"points_not_timed", c.points_not_timed},
          {"findings", c.findings},
          {"worse", c.worse_count()}};
}

}  // namespace timeroof::roofline
