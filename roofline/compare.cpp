#include "roofline/compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "core/format.hpp"
#include "core/vocabulary.hpp"
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

std::string format_ratio(const Ratio& r) {
  return format_number(r.value, hint::significant_3) + "x [" +
         format_number(r.low, hint::significant_3) + ", " +
         format_number(r.high, hint::significant_3) + "]";
}

int Comparison::worse_count() const {
  int n = 0;
  for (const RoofComparison& r : roofs) n += r.verdict == Verdict::worse;
  for (const PointComparison& p : points) n += p.verdict == Verdict::worse;
  return n;
}

std::string ComparedSeries::name() const {
  return sweep + " " + op + " " + precision + (distinct.empty() ? "" : " (" + distinct + ")");
}

std::vector<std::string> varying_params(const std::vector<const PointComparison*>& points) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const PointComparison* p : points)
    for (const std::string& key : param_keys(p->params)) {
      if (!seen.insert(key).second) continue;
      const nlohmann::json& value = p->params[key];
      for (const PointComparison* q : points)
        if (q->params.value(key, nlohmann::json()) != value) {
          keys.push_back(key);
          break;
        }
    }
  // param_keys order over the union: batch first, then alphabetical.
  std::sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) {
    return std::make_pair(a != "batch", a) < std::make_pair(b != "batch", b);
  });
  return keys;
}

ComparedSide analyse_side(std::vector<RunRecord> runs) {
  ComparedSide side;
  side.runs = std::move(runs);
  side.analyses.reserve(side.runs.size());
  for (const RunRecord& record : side.runs) side.analyses.push_back(analyze(record));
  return side;
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

// The runs of a side from oldest to newest: by start time (ISO 8601 UTC sorts
// as text), the later in the side's order among equals. rank[i] is run i's place.
std::vector<std::size_t> newness_rank(const ComparedSide& side) {
  std::vector<std::size_t> order(side.runs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return side.runs[a].run.started_at < side.runs[b].run.started_at;
  });
  std::vector<std::size_t> rank(order.size());
  for (std::size_t place = 0; place < order.size(); ++place) rank[order[place]] = place;
  return rank;
}

bool timed(const PointAnalysis& analysis) {
  return analysis.analysed && analysis.bounds.time_s && *analysis.bounds.time_s > 0;
}

// "run 4 (2026-11-23T20:52:50Z), conv2d-default #12": one measurement of a point.
// Runs read from a file have no store id: their uuid's start names them.
std::string measurement_name(const ComparedSide& side, const PointRef& ref) {
  const Run& run = side.runs[ref.run].run;
  std::string name = run.id != 0         ? "run " + std::to_string(run.id)
                     : !run.uuid.empty() ? "run " + run.uuid.substr(0, 8)
                                         : "run #" + std::to_string(ref.run + 1) + " of the side";
  if (!run.started_at.empty()) name += " (" + run.started_at + ")";
  const Point& point = side.runs[ref.run].points[ref.point];
  return name + ", " + point.sweep + " #" + std::to_string(point.seq);
}

// One side's roofs and points by identity, each once.
struct SideIndex {
  std::vector<std::string> ceiling_order;  // first appearance
  std::map<std::string, const Ceiling*> ceiling_by_name;
  std::vector<std::string> point_order;  // first appearance
  std::map<std::string, PointRef> points;
  std::vector<DuplicatePoint> duplicates;

  SideIndex(const ComparedSide& side, const std::string& side_name) {
    const std::vector<std::size_t> rank = newness_rank(side);
    std::map<std::string, std::size_t> ceiling_rank;
    std::map<std::string, std::vector<PointRef>> measurements;
    for (std::size_t r = 0; r < side.runs.size(); ++r) {
      for (const Ceiling& c : side.runs[r].run.machine.ceilings) {
        const auto [it, inserted] = ceiling_rank.try_emplace(c.name, rank[r]);
        if (inserted) ceiling_order.push_back(c.name);
        if (inserted || rank[r] >= it->second) {
          it->second = rank[r];
          ceiling_by_name[c.name] = &c;
        }
      }
      for (std::size_t i = 0; i < side.runs[r].points.size(); ++i) {
        const std::string key = point_key(side.runs[r].points[i]);
        auto [it, inserted] = measurements.try_emplace(key);
        if (inserted) point_order.push_back(key);
        it->second.push_back({r, i});
      }
    }
    for (const std::string& key : point_order) {
      std::vector<PointRef>& refs = measurements[key];
      // Oldest first; within one run, in the order measured.
      std::stable_sort(refs.begin(), refs.end(), [&](const PointRef& a, const PointRef& b) {
        return std::tie(rank[a.run], a.point) < std::tie(rank[b.run], b.point);
      });
      // The newest the model could time, else the newest: a later failure does
      // not hide a good measurement, and it is still named below.
      auto kept = std::find_if(refs.rbegin(), refs.rend(), [&](const PointRef& ref) {
        return timed(side.analyses[ref.run].points[ref.point]);
      });
      points[key] = kept != refs.rend() ? *kept : refs.back();
      if (refs.size() < 2) continue;
      DuplicatePoint d;
      d.side = side_name;
      d.point = key;
      for (const PointRef& ref : refs) d.measured_in.push_back(measurement_name(side, ref));
      d.kept = measurement_name(side, points[key]);
      duplicates.push_back(std::move(d));
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
  return hz ? format_si(*hz, "Hz") : "";
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

// Matched points along the parameter, grouped as roofline::group_series groups
// a run's points; series of one point are not series.
std::vector<ComparedSeries> compared_series(const std::vector<PointComparison>& points,
                                            const std::string& parameter) {
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;
  std::map<Key, ComparedSeries> groups;
  std::vector<Key> order;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const PointComparison& p = points[i];
    const auto x = p.params.find(parameter);
    if (!p.params.is_object() || x == p.params.end() || !x->is_number()) continue;
    nlohmann::json fixed = p.params;
    fixed.erase(parameter);
    const Key key{p.sweep, p.op, p.precision, p.math_mode, fixed.dump()};
    auto [it, inserted] = groups.try_emplace(key);
    if (inserted) {
      order.push_back(key);
      it->second = {p.sweep, p.op, p.precision, p.math_mode, std::move(fixed), "", {}};
    }
    it->second.points.push_back(i);
  }
  std::vector<ComparedSeries> out;
  for (const Key& key : order) {
    ComparedSeries& s = groups.at(key);
    if (s.points.size() < 2) continue;
    std::stable_sort(s.points.begin(), s.points.end(), [&](std::size_t a, std::size_t b) {
      return points[a].params[parameter].get<double>() < points[b].params[parameter].get<double>();
    });
    out.push_back(std::move(s));
  }
  name_distinct_series(out);
  return out;
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

std::string points_text(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " point" : " points");
}

// What the findings read: the comparison and both sides' analyses.
struct FindingsInput {
  const Comparison& comparison;
  const ComparedSide& base;
  const ComparedSide& other;
};

// Points next to each other with one verdict (and, where not the same, one
// pair of classes): a stretch of the parameter where one sentence holds.
struct Stretch {
  std::vector<const PointComparison*> points;
  Verdict verdict = Verdict::same;
  double time_difference = 0;  // sum of |T_other - T_base|, seconds
};

using Points = std::vector<const PointComparison*>;

// "1.38x faster", "1.12x slower", "the same within noise": the geometric mean
// of the points' T_other / T_base.
std::string verdict_text(const Points& points, Verdict verdict) {
  if (verdict == Verdict::same) return "the same within noise";
  double log_sum = 0;
  for (const PointComparison* p : points) log_sum += std::log(p->ratio.value);
  const double ratio = std::exp(log_sum / static_cast<double>(points.size()));
  return verdict == Verdict::better ? format_number(1 / ratio, hint::ratio) + " faster"
                                    : format_number(ratio, hint::ratio) + " slower";
}

// "memory_bound(dram) on both, and its dram roof is 1.47x" (the roof with
// `explain`); "launch_bound on H100, memory_bound(l2) on H200"; "" where the
// points' classes vary.
std::string classes_text(const FindingsInput& in, const Points& points, bool explain) {
  const PointComparison& first = *points.front();
  for (const PointComparison* p : points)
    if (p->base_class != first.base_class || p->other_class != first.other_class) return "";
  const Comparison& c = in.comparison;
  if (first.base_class != first.other_class)
    return first.base_class + " on " + c.base_label + ", " + first.other_class + " on " +
           c.other_label;
  std::string text = first.base_class + " on both";
  if (!explain) return text;
  // The point that differs most in time speaks for them.
  const PointComparison& p = **std::max_element(
      points.begin(), points.end(), [](const PointComparison* a, const PointComparison* b) {
        return std::fabs(a->other_time_s - a->base_time_s) <
               std::fabs(b->other_time_s - b->base_time_s);
      });
  const PointAnalysis& analysis = in.base.analyses[p.base_ref.run].points[p.base_ref.point];
  if (const auto roof = explaining_roof(analysis, in.base.analyses[p.base_ref.run].roofs,
                                        in.other.analyses[p.other_ref.run].roofs))
    text +=
        ", and its " + roof->name + " is " + format_number(roof->other / roof->base, hint::ratio);
  return text;
}

// Where along the series stretches lie: "at batch 16", "at batch <= 64", "at
// batch >= 128", "at batch 16-64", "at batch 8, 64-128", "at every batch,
// 1-1024".
std::string where_text(const ComparedSeries& series, const Comparison& c,
                       const std::vector<const Stretch*>& stretches) {
  const std::string& parameter = c.options.parameter;
  auto value = [&](const PointComparison& p) { return param_value_text(p.params[parameter]); };
  const PointComparison& series_first = c.points[series.points.front()];
  const PointComparison& series_last = c.points[series.points.back()];
  std::string ranges;
  for (const Stretch* s : stretches) {
    const PointComparison& first = *s->points.front();
    const PointComparison& last = *s->points.back();
    const bool from_start = &first == &series_first, to_end = &last == &series_last;
    if (from_start && to_end && s->points.size() > 1)
      return "at every " + parameter + ", " + value(first) + "-" + value(last);
    ranges += ranges.empty() ? "" : ", ";
    if (s->points.size() == 1)
      ranges += value(first);
    else if (from_start)
      ranges += "<= " + value(last);
    else if (to_end)
      ranges += ">= " + value(first);
    else
      ranges += value(first) + "-" + value(last);
  }
  return "at " + parameter + " " + ranges;
}

struct RankedFinding {
  std::string text;
  double time_difference = 0;
};

// One sentence per series where some stretch is not the same: the stretch
// that differs most in time first, with the roof that explains it; then, per
// verdict, where else along the parameter it holds.
void series_findings(const FindingsInput& in, std::vector<RankedFinding>& out) {
  const Comparison& c = in.comparison;
  for (const ComparedSeries& series : c.series) {
    std::vector<Stretch> stretches;
    for (std::size_t i : series.points) {
      const PointComparison& p = c.points[i];
      const double difference = std::fabs(p.other_time_s - p.base_time_s);
      if (!stretches.empty()) {
        Stretch& s = stretches.back();
        const PointComparison& q = *s.points.back();
        // A "same" stretch ignores classes: where nothing changed, how each
        // side is bound matters less than where the change starts.
        if (s.verdict == p.verdict &&
            (p.verdict == Verdict::same ||
             (q.base_class == p.base_class && q.other_class == p.other_class))) {
          s.points.push_back(&p);
          s.time_difference += difference;
          continue;
        }
      }
      stretches.push_back({{&p}, p.verdict, difference});
    }
    const Stretch* lead = nullptr;
    double differs_s = 0;
    for (const Stretch& s : stretches) {
      if (s.verdict == Verdict::same) continue;
      differs_s += s.time_difference;
      if (!lead || s.time_difference > lead->time_difference) lead = &s;
    }
    if (!lead) continue;
    std::string text = c.other_label + " is " + verdict_text(lead->points, lead->verdict) + " on " +
                       series.name() + " " + where_text(series, c, {lead}) + " (" +
                       points_text(lead->points.size()) + ")";
    if (const std::string classes = classes_text(in, lead->points, true); !classes.empty())
      text += ": " + classes;
    // The rest by verdict, in the order each verdict first appears along the series.
    std::vector<Verdict> verdicts;
    for (const Stretch& s : stretches)
      if (&s != lead && std::find(verdicts.begin(), verdicts.end(), s.verdict) == verdicts.end())
        verdicts.push_back(s.verdict);
    for (Verdict verdict : verdicts) {
      std::vector<const Stretch*> part;
      Points points;
      for (const Stretch& s : stretches)
        if (&s != lead && s.verdict == verdict) {
          part.push_back(&s);
          points.insert(points.end(), s.points.begin(), s.points.end());
        }
      text += std::string("; ") + (verdict == lead->verdict ? "also " : "") +
              verdict_text(points, verdict) + " " + where_text(series, c, part) + " (" +
              points_text(points.size()) + ")";
      if (const std::string classes = classes_text(in, points, false); !classes.empty())
        text += ": " + classes;
    }
    out.push_back({text + ".", differs_s});
  }
}

// Points outside every series (one-at-a-time variations of other parameters):
// one sentence per sweep, operator, precision, verdict and pair of classes,
// for the verdicts that are not the same.
void lone_point_findings(const FindingsInput& in, std::vector<RankedFinding>& out) {
  const Comparison& c = in.comparison;
  std::vector<bool> in_series(c.points.size(), false);
  for (const ComparedSeries& s : c.series)
    for (std::size_t i : s.points) in_series[i] = true;
  using OperatorKey = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<OperatorKey, std::vector<const PointComparison*>> by_operator;
  std::map<std::string, std::vector<const PointComparison*>> groups;
  std::vector<std::string> order;
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    if (in_series[i]) continue;
    const PointComparison& p = c.points[i];
    by_operator[{p.sweep, p.op, p.precision, p.math_mode}].push_back(&p);
    if (p.verdict == Verdict::same) continue;
    const std::string key = p.sweep + "|" + p.op + "|" + p.precision + "|" + p.math_mode + "|" +
                            to_string(p.verdict) + "|" + p.base_class + "|" + p.other_class;
    auto [it, inserted] = groups.try_emplace(key);
    if (inserted) order.push_back(key);
    it->second.push_back(&p);
  }
  for (const std::string& key : order) {
    Stretch s;
    s.points = groups[key];
    s.verdict = s.points.front()->verdict;
    for (const PointComparison* p : s.points)
      s.time_difference += std::fabs(p->other_time_s - p->base_time_s);
    const PointComparison& first = *s.points.front();
    // One point is named by what tells it from the operator's other lone
    // points; several by what varies among them.
    std::vector<std::string> varying =
        varying_params(s.points.size() == 1
                           ? by_operator[{first.sweep, first.op, first.precision, first.math_mode}]
                           : s.points);
    std::string detail = points_text(s.points.size());
    const auto x = first.params.find(c.options.parameter);
    const bool one_x = x != first.params.end() &&
                       std::all_of(s.points.begin(), s.points.end(), [&](const PointComparison* p) {
                         return p->params.value(c.options.parameter, nlohmann::json()) == *x;
                       });
    if (one_x) detail += " at " + c.options.parameter + " " + param_value_text(*x);
    std::erase(varying, c.options.parameter);
    if (s.points.size() == 1 && !varying.empty())
      detail += ", " + params_text(first.params, varying);
    else if (!varying.empty()) {
      detail += ", varying";
      for (std::size_t k = 0; k < varying.size(); ++k) detail += (k ? ", " : " ") + varying[k];
    }
    const std::string classes = classes_text(in, s.points, true);
    out.push_back({c.other_label + " is " + verdict_text(s.points, s.verdict) + " on " +
                       first.sweep + " " + first.op + " " + first.precision + " (" + detail + ")" +
                       (classes.empty() ? "" : ": " + classes) + ".",
                   s.time_difference});
  }
}

std::vector<std::string> findings_of(const FindingsInput& in) {
  std::vector<RankedFinding> ranked;
  series_findings(in, ranked);
  lone_point_findings(in, ranked);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const RankedFinding& a, const RankedFinding& b) {
                     return a.time_difference > b.time_difference;
                   });
  std::vector<std::string> out;
  for (RankedFinding& f : ranked) out.push_back(std::move(f.text));
  return out;
}

}  // namespace

std::optional<std::size_t> roofs_run(const ComparedSide& side) {
  if (side.runs.empty()) return std::nullopt;
  const std::vector<std::size_t> rank = newness_rank(side);
  std::optional<std::size_t> newest, newest_with_roofs;
  for (std::size_t r = 0; r < side.runs.size(); ++r) {
    if (!newest || rank[r] > rank[*newest]) newest = r;
    if (!side.runs[r].run.machine.ceilings.empty() &&
        (!newest_with_roofs || rank[r] > rank[*newest_with_roofs]))
      newest_with_roofs = r;
  }
  return newest_with_roofs ? newest_with_roofs : newest;
}

namespace {

// The newest run of `side` holding model `name` (its index), or nullopt.
std::optional<std::size_t> model_run(const ComparedSide& side, const std::string& name) {
  std::optional<std::size_t> found;
  const std::vector<std::size_t> rank = newness_rank(side);
  for (std::size_t i = 0; i < side.runs.size(); ++i)
    if (side.analyses[i].model && side.analyses[i].model->name == name &&
        (!found || rank[i] > rank[*found]))
      found = i;
  return found;
}

std::vector<ModelComparison> model_comparisons(const ComparedSide& base, const ComparedSide& other,
                                               const CompareOptions& options) {
  std::vector<ModelComparison> out;
  std::set<std::string> seen;
  for (const RunAnalysis& analysis : base.analyses) {
    if (!analysis.model || !seen.insert(analysis.model->name).second) continue;
    const std::string& name = analysis.model->name;
    const auto x = model_run(base, name);
    const auto y = model_run(other, name);
    if (!x || !y) continue;
    const ModelAnalysis& a = *base.analyses[*x].model;
    const ModelAnalysis& b = *other.analyses[*y].model;
    ModelComparison m;
    m.name = name;
    // The other side's layers by (name, batch): their batch and result.
    std::map<std::pair<std::string, std::int64_t>, const ModelLayerResult*> theirs;
    for (const ModelBatch& bb : b.batches)
      for (const ModelLayerResult& r : bb.layers) theirs[{b.layers[r.layer].name, bb.batch}] = &r;
    std::set<std::pair<std::string, std::int64_t>> matched;
    for (const ModelBatch& ab : a.batches) {
      const auto bb = std::find_if(b.batches.begin(), b.batches.end(),
                                   [&](const ModelBatch& mb) { return mb.batch == ab.batch; });
      if (bb != b.batches.end())
        m.batches.push_back({ab.batch, ab.time_s, bb->time_s,
                             ab.time_s > 0 ? bb->time_s / ab.time_s : 1, ab.bound_s, bb->bound_s,
                             ab.headroom, bb->headroom,
                             std::max(ab.missing.size(), bb->missing.size())});
      for (const ModelLayerResult& r : ab.layers) {
        const std::string& layer = a.layers[r.layer].name;
        const auto found = theirs.find({layer, ab.batch});
        if (found == theirs.end()) {
          m.only_in_base.push_back(layer + " at batch " + std::to_string(ab.batch));
          continue;
        }
        matched.insert(found->first);
        const ModelLayerResult& s = *found->second;
        if (!r.time_s || !s.time_s) continue;  // not timed: the points say why
        ModelLayerComparison l;
        l.layer = layer;
        l.batch = ab.batch;
        l.count = a.layers[r.layer].count;
        l.base_time_s = *r.time_s;
        l.other_time_s = *s.time_s;
        l.ratio = ratio_of(
            l.base_time_s, half_width(base.analyses[*x].points.at(*r.point).bounds.time_stats()),
            l.other_time_s, half_width(other.analyses[*y].points.at(*s.point).bounds.time_stats()));
        l.base_class = r.class_label;
        l.other_class = s.class_label;
        l.verdict = verdict_of(l.ratio, true, options.threshold);
        m.layers.push_back(std::move(l));
      }
    }
    for (const auto& [key, result] : theirs)
      if (!matched.count(key))
        m.only_in_other.push_back(key.first + " at batch " + std::to_string(key.second));
    out.push_back(std::move(m));
  }
  return out;
}

nlohmann::json models_json(const std::vector<ModelComparison>& models) {
  const auto optional = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json out = nlohmann::json::array();
  for (const ModelComparison& m : models) {
    nlohmann::json batches = nlohmann::json::array(), layers = nlohmann::json::array();
    for (const ModelBatchComparison& b : m.batches)
      batches.push_back({{"batch", b.batch},
                         {"base_time_s", b.base_time_s},
                         {"other_time_s", b.other_time_s},
                         {"ratio", b.ratio},
                         {"base_lower_bound_s", b.base_bound_s},
                         {"other_lower_bound_s", b.other_bound_s},
                         {"base_headroom", optional(b.base_headroom)},
                         {"other_headroom", optional(b.other_headroom)},
                         {"missing", b.missing}});
    for (const ModelLayerComparison& l : m.layers)
      layers.push_back(
          {{"layer", l.layer},
           {"batch", l.batch},
           {"count", l.count},
           {"base_time_s", l.base_time_s},
           {"other_time_s", l.other_time_s},
           {"ratio", {{"value", l.ratio.value}, {"low", l.ratio.low}, {"high", l.ratio.high}}},
           {"base_class", l.base_class},
           {"other_class", l.other_class},
           {"verdict", to_string(l.verdict)}});
    out.push_back({{"name", m.name},
                   {"batches", batches},
                   {"layers", layers},
                   {"only_in_base", m.only_in_base},
                   {"only_in_other", m.only_in_other}});
  }
  return out;
}

}  // namespace

Comparison compare_runs(const ComparedSide& base, const ComparedSide& other,
                        const CompareOptions& options) {
  Comparison c;
  c.options = options;
  c.base_label = options.base_label.empty() ? label_of(base.runs) : options.base_label;
  c.other_label = options.other_label.empty() ? label_of(other.runs) : options.other_label;
  const SideIndex a(base, "base"), b(other, "other");
  const auto a_roofs = roofs_run(base), b_roofs = roofs_run(other);
  if (a_roofs && b_roofs)
    c.provenance = provenance_changes(base.runs[*a_roofs], other.runs[*b_roofs]);

  for (const std::string& name : a.ceiling_order) {
    const auto found = b.ceiling_by_name.find(name);
    if (found == b.ceiling_by_name.end()) {
      c.roofs_only_in_base.push_back(name);
      continue;
    }
    const Ceiling& x = *a.ceiling_by_name.at(name);
    const Ceiling& y = *found->second;
    if (x.measured <= 0 || y.measured <= 0) continue;
    RoofComparison r;
    r.name = name;
    r.unit = x.unit;
    r.base = x.measured;
    r.other = y.measured;
    r.lower_is_better = x.unit == "s";
    // A roof's spread is (max - min) / median over its repeats: half of it as the width.
    r.ratio = ratio_of(r.base, x.spread / 2, r.other, y.spread / 2);
    r.verdict = verdict_of(r.ratio, r.lower_is_better, options.threshold);
    c.roofs.push_back(r);
  }
  for (const std::string& name : b.ceiling_order)
    if (!a.ceiling_by_name.count(name)) c.roofs_only_in_other.push_back(name);

  for (const std::string& key : a.point_order) {
    const PointRef x = a.points.at(key);
    const auto found = b.points.find(key);
    if (found == b.points.end()) {
      c.points_only_in_base.push_back(key);
      continue;
    }
    const PointRef y = found->second;
    const PointAnalysis& xa = base.analyses[x.run].points[x.point];
    const PointAnalysis& ya = other.analyses[y.run].points[y.point];
    if (!timed(xa) || !timed(ya)) {
      c.points_not_timed.push_back(key);
      continue;
    }
    const Point& xp = base.runs[x.run].points[x.point];
    const Point& yp = other.runs[y.run].points[y.point];
    PointComparison p;
    p.sweep = xp.sweep;
    p.op = xp.op;
    p.params = xp.params;
    p.precision = xp.precision;
    p.math_mode = xp.math_mode;
    p.base_seq = xp.seq;
    p.other_seq = yp.seq;
    p.base_ref = x;
    p.other_ref = y;
    p.base_time_s = *xa.bounds.time_s;
    p.other_time_s = *ya.bounds.time_s;
    p.ratio = ratio_of(p.base_time_s, half_width(xa.bounds.time_stats()), p.other_time_s,
                       half_width(ya.bounds.time_stats()));
    p.base_class = xa.classification.label();
    p.other_class = ya.classification.label();
    p.verdict = verdict_of(p.ratio, true, options.threshold);
    c.points.push_back(std::move(p));
  }
  for (const std::string& key : b.point_order)
    if (!a.points.count(key)) c.points_only_in_other.push_back(key);
  c.duplicates = a.duplicates;
  c.duplicates.insert(c.duplicates.end(), b.duplicates.begin(), b.duplicates.end());

  c.series = compared_series(c.points, options.parameter);
  c.findings = findings_of({c, base, other});
  c.models = model_comparisons(base, other, options);
  return c;
}

Comparison compare_runs(const std::vector<RunRecord>& base, const std::vector<RunRecord>& other,
                        const CompareOptions& options) {
  return compare_runs(analyse_side(base), analyse_side(other), options);
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
                      {"math_mode", p.math_mode},
                      {"base_seq", p.base_seq},
                      {"other_seq", p.other_seq},
                      {"base_time_s", p.base_time_s},
                      {"other_time_s", p.other_time_s},
                      {"ratio", ratio(p.ratio)},
                      {"base_class", p.base_class},
                      {"other_class", p.other_class},
                      {"verdict", to_string(p.verdict)}});
  nlohmann::json series = nlohmann::json::array();
  for (const ComparedSeries& s : c.series)
    series.push_back({{"name", s.name()},
                      {"sweep", s.sweep},
                      {"op", s.op},
                      {"precision", s.precision},
                      {"math_mode", s.math_mode},
                      {"fixed", s.fixed},
                      {"points", s.points}});
  nlohmann::json duplicates = nlohmann::json::array();
  for (const DuplicatePoint& d : c.duplicates)
    duplicates.push_back(
        {{"side", d.side}, {"point", d.point}, {"measured_in", d.measured_in}, {"kept", d.kept}});
  return {{"format", kComparisonFormat},
          {"schema_version", kComparisonSchemaVersion},
          {"base", c.base_label},
          {"other", c.other_label},
          {"threshold", c.options.threshold},
          {"parameter", c.options.parameter},
          {"provenance", provenance},
          {"roofs", roofs},
          {"roofs_only_in_base", c.roofs_only_in_base},
          {"roofs_only_in_other", c.roofs_only_in_other},
          {"points", points},
          {"series", series},
          {"points_only_in_base", c.points_only_in_base},
          {"points_only_in_other", c.points_only_in_other},
          {"points_not_timed", c.points_not_timed},
          {"duplicates", duplicates},
          {"findings", c.findings},
          {"worse", c.worse_count()},
          {"models", models_json(c.models)}};
}

}  // namespace timeroof::roofline
