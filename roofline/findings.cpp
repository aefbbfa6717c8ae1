#include "roofline/findings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace timeroof::roofline {
namespace {

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// "53%"; below 1% one decimal ("0.4%"), so a small share is not shown as 0.
std::string percent(double fraction) {
  const double pct = 100 * fraction;
  if (pct > 0 && pct < 0.05) return "<0.1%";
  return printf_string(pct > 0 && pct < 0.95 ? "%.1f%%" : "%.0f%%", pct);
}

const char* level_name(Level level) {
  switch (level) {
    case Level::l1:
      return "L1";
    case Level::l2:
      return "L2";
    case Level::dram:
      return "HBM";
  }
  return "?";
}

std::string peak_name(Precision p) {
  switch (p) {
    case Precision::fp64:
      return "FP64 FMA peak";
    case Precision::fp32:
      return "FP32 FMA peak";
    case Precision::half:
      return "FP16/BF16 FMA peak";
    case Precision::tensor_fp16:
      return "FP16 Tensor Core peak";
    case Precision::tensor_bf16:
      return "BF16 Tensor Core peak";
    case Precision::tensor_tf32:
      return "TF32 Tensor Core peak";
    case Precision::tensor_fp8:
      return "FP8 Tensor Core peak";
    case Precision::tensor_int8:
      return "INT8 Tensor Core peak";
    case Precision::tensor_fp64:
      return "FP64 Tensor Core peak";
  }
  return "peak";
}

// The class of `tensor` (or not) with the largest share of T_compute.
std::optional<Precision> dominant(const PointBounds& b, bool tensor) {
  std::optional<Precision> best;
  double best_s = 0;
  for (Precision p : kAllPrecisions) {
    if (is_tensor(p) != tensor) continue;
    const double s = b.compute_s[static_cast<std::size_t>(p)];
    if (s > best_s) best = p, best_s = s;
  }
  return best;
}

// "CUDA cores at 46% of FP32 FMA peak; Tensor Cores unused (math fma_only)".
std::string compute_clause(const PointBounds& b, const std::string& math_mode) {
  std::string out;
  const double tk = b.kernel_s.value_or(0);
  if (tk <= 0) return out;
  const bool tensor_work = b.tensor_share.value_or(0) > 0;
  if (const auto p = dominant(b, false); p && (!tensor_work || b.t_cuda >= 0.1 * b.t_compute))
    out += "CUDA cores at " + percent(b.t_cuda / tk) + " of " + peak_name(*p);
  const double share = b.tensor_share.value_or(0);
  if (!out.empty()) out += "; ";
  if (share > 0) {
    const auto t = dominant(b, true);
    out += "Tensor Cores do " + percent(share) + " of the FLOPs at " + percent(b.t_tensor / tk) +
           " of the " + (t ? peak_name(*t) : std::string("Tensor Core peak"));
  } else {
    out += "Tensor Cores unused (math " + (math_mode.empty() ? std::string("?") : math_mode) + ")";
  }
  return out;
}

std::string range_text(const Series& s, const ClassSegment& g) {
  const std::string& name = s.parameter;
  const double first = s.points.front().x, last = s.points.back().x;
  if (g.x_first == g.x_last) return name + " = " + format_value(g.x_first);
  if (g.x_first == first && g.x_last == last)
    return name + " " + format_value(first) + "-" + format_value(last);
  if (g.x_first == first) return name + " <= " + format_value(g.x_last);
  if (g.x_last == last) return name + " >= " + format_value(g.x_first);
  return name + " " + format_value(g.x_first) + "-" + format_value(g.x_last);
}

// The point of the group with the median wall time (lower median).
const SeriesPoint& representative(const Series& s, const ClassSegment& g) {
  std::vector<const SeriesPoint*> members;
  for (std::size_t i = g.first; i <= g.last; ++i) members.push_back(&s.points[i]);
  std::sort(members.begin(), members.end(), [](const SeriesPoint* l, const SeriesPoint* r) {
    return l->classification.parts.wall_s < r->classification.parts.wall_s;
  });
  return *members[(members.size() - 1) / 2];
}

// " at batch 16": where the quoted numbers come from, for groups of several points.
std::string at_text(const Series& s, const ClassSegment& g, const SeriesPoint& p) {
  if (g.first == g.last) return "";
  return " at " + s.parameter + " " + format_value(p.x);
}

// The share of a point's own call a value explains, in [0, 1].
double share_of_call(double explained_s, const SeriesPoint& p) {
  const double wall = p.classification.parts.wall_s;
  return wall > 0 ? std::clamp(explained_s / wall, 0.0, 1.0) : 0.0;
}

double explained(const SeriesPoint& p) {
  const PointBounds& b = p.bounds;
  const Classification& c = p.classification;
  const double wall = c.parts.wall_s;
  switch (c.bottleneck) {
    case Bottleneck::launch_bound:
      return std::min(wall, std::max(c.parts.overhead_s, b.t_launch.value_or(0)));
    case Bottleneck::transfer_bound:
      return c.parts.transfer_s;
    case Bottleneck::memory_bound:
      return c.level ? b.level(*c.level).time_s.value_or(0) : 0;
    case Bottleneck::compute_bound:
      return b.t_compute;
    case Bottleneck::latency_bound:
      return std::max(0.0, b.kernel_s.value_or(0) - b.t_kernel_roof);
    case Bottleneck::unknown:
      return 0;
  }
  return 0;
}

std::string sentence(const Series& s, const ClassSegment& g, const MachineRoofs& roofs) {
  const SeriesPoint& p = representative(s, g);
  const PointBounds& b = p.bounds;
  const Classification& c = p.classification;
  const double wall = c.parts.wall_s;
  const double tk = b.kernel_s.value_or(0);
  const std::string at = at_text(s, g, p);
  std::string out = s.name() + ", " + range_text(s, g) + ": ";
  switch (c.bottleneck) {
    case Bottleneck::launch_bound: {
      // Lead with the launches where N x L explains a good part of the call (the
      // LSTM's per-step launches); else with the host/API time they do not explain.
      out += "launch-bound — ";
      const std::string count =
          b.launches ? std::to_string(*b.launches) + (*b.launches == 1 ? " launch" : " launches")
                     : std::string("launches unknown");
      const bool launches_explain = b.t_launch && *b.t_launch >= 0.25 * wall;
      if (launches_explain && roofs.launch.available()) {
        out += count + " x " + format_time(*roofs.launch.value) + " = " +
               percent(*b.t_launch / wall) + " of " + format_time(wall) + at;
      } else {
        out += "host/API overhead " + format_time(c.parts.overhead_s) + " = " +
               percent(c.parts.overhead_s / wall) + " of " + format_time(wall) + at;
        if (b.launches && roofs.launch.available())
          out += " with " + count + " x " + format_time(*roofs.launch.value);
      }
      if (wall > 0) out += "; kernels busy " + percent(tk / wall) + " of the call";
      break;
    }
    case Bottleneck::transfer_bound: {
      out += "transfer-bound — host<->device copies " + format_time(c.parts.transfer_s) + " = " +
             percent(c.parts.transfer_s / wall) + " of " + format_time(wall) + at;
      // The roofs of the point's own host memory, and how close the copies came.
      const std::string xfer_roofs = transfer_roofs_text(b);
      if (b.t_xfer > 0 && !xfer_roofs.empty()) {
        out += "; T_xfer " + format_time(b.t_xfer) + " on the " + xfer_roofs;
        if (b.transfer_measured_s && *b.transfer_measured_s > 0) {
          const bool both = xfer_roofs.find(", ") != std::string::npos;
          out += " (copies at " + percent(b.t_xfer / *b.transfer_measured_s) + " of the roof" +
                 (both ? "s)" : ")");
        }
      }
      break;
    }
    case Bottleneck::memory_bound: {
      const Level l = c.level.value_or(Level::dram);
      const double tm = b.level(l).time_s.value_or(0);
      out += std::string(level_name(l)) + "-bound at " + percent(tk > 0 ? tm / tk : 0) +
             " of the " + level_name(l) + " roof (" + format_time(tm) + " of " + format_time(tk) +
             " kernel time" + at + ")";
      const std::string cc = compute_clause(b, s.math_mode);
      if (!cc.empty()) out += "; " + cc;
      break;
    }
    case Bottleneck::compute_bound: {
      out += "compute-bound — " + (at.empty() ? "" : at.substr(1) + ", ");
      if (c.unit == ComputeUnit::tensor_core) {
        const auto t = dominant(b, true);
        out += "Tensor Cores at " + percent(tk > 0 ? b.t_tensor / tk : 0) + " of the " +
               (t ? peak_name(*t) : std::string("Tensor Core peak")) + " (" +
               percent(b.tensor_share.value_or(0)) + " of the FLOPs)";
      } else {
        out += compute_clause(b, s.math_mode);
      }
      break;
    }
    case Bottleneck::latency_bound: {
      const std::string lim = b.limiting_roof == "compute" ? "compute"
                              : b.limiting_roof == "l1"    ? "L1"
                              : b.limiting_roof == "l2"    ? "L2"
                              : b.limiting_roof == "dram"  ? "HBM"
                                                           : b.limiting_roof;
      out += "latency-bound — " + (at.empty() ? "" : at.substr(1) + ", ") + "kernels at " +
             percent(b.efficiency.value_or(0)) + " of their roof (" + lim + "), " +
             format_time(tk) + " of kernels in a " + format_time(wall) + " call";
      const std::string cc = compute_clause(b, s.math_mode);
      if (!cc.empty()) out += "; " + cc;
      break;
    }
    case Bottleneck::unknown:
      out += "not classified (no time measured)";
      break;
  }
  return out;
}

}  // namespace

std::string format_time(double seconds) {
  const double a = std::fabs(seconds);
  const char* unit = "s";
  double v = seconds;
  if (a < 1e-3) {
    unit = "us";
    v = seconds * 1e6;
  } else if (a < 1) {
    unit = "ms";
    v = seconds * 1e3;
  }
  const double av = std::fabs(v);
  const char* format = av < 10 ? "%.1f %s" : "%.0f %s";
  if (av > 0 && av < 0.1) format = "%.2g %s";
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v, unit);
  return buf;
}

// A finding about `s` over [x_first, x_last], with nothing explained yet.
Finding series_finding(const Series& s, double x_first, double x_last, std::string label,
                       std::size_t points) {
  Finding f;
  f.series = s.name();
  f.sweep = s.sweep;
  f.parameter = s.parameter;
  f.x_first = x_first;
  f.x_last = x_last;
  f.label = std::move(label);
  f.points = points;
  return f;
}

std::vector<Finding> series_findings(const std::vector<Series>& series, const MachineRoofs& roofs,
                                     const FindingsOptions& options) {
  std::vector<Finding> out;
  for (const Series& s : series) {
    if (s.points.empty()) continue;
    const double n = static_cast<double>(s.points.size());
    const std::size_t first_of_series = out.size();
    for (const ClassSegment& g : class_segments(s)) {
      Finding f = series_finding(s, g.x_first, g.x_last, g.label, g.last - g.first + 1);
      for (std::size_t i = g.first; i <= g.last; ++i) {
        const double e = explained(s.points[i]);
        f.explained_s += e;
        f.share += share_of_call(e, s.points[i]) / n;
      }
      f.text = sentence(s, g, roofs);
      out.push_back(std::move(f));
    }
    if (!options.include_fits || s.points.size() < 3) continue;
    const SeriesFit fit = fit_series(s, options.fit);
    const LinearFit& w = fit.wall;
    if (w.n < 3) continue;
    const std::string per_unit =
        s.parameter == "batch" ? std::string(" per sample") : " per unit of " + s.parameter;
    const std::string line = format_time(w.a) + " + " + format_time(w.c) + per_unit;
    const bool beyond = w.knee && *w.knee > w.x_max;
    if (!w.knee || beyond) {
      // Flat, fixed cost dominant over the whole range, or no fixed cost: said on
      // the series' finding where one class covers it all, else on its own.
      const std::string clause = beyond ? "the fixed cost dominates up to " + s.parameter + " " +
                                              format_value(w.x_max) + " (fit " + line +
                                              ", knee ~ " + printf_string("%.0f", *w.knee) + ")"
                                 : w.knee_note.find("flat") != std::string::npos
                                     ? "time flat in " + s.parameter + " (fit " + line + ")"
                                     : "no fixed cost resolved (fit " + line + ")";
      if (fit.segments.size() == 1) {
        out[first_of_series].text += "; " + clause;
        continue;
      }
      Finding f = series_finding(s, s.points.front().x, s.points.back().x, "fit", w.n);
      for (const SeriesPoint& p : s.points) {
        const double fixed = std::min(std::max(w.a, 0.0), p.classification.parts.wall_s);
        f.explained_s += fixed;
        f.share += share_of_call(fixed, p) / n;
      }
      f.text = s.name() + ", " + s.parameter + " " + format_value(f.x_first) + "-" +
               format_value(f.x_last) + ": " + clause;
      out.push_back(std::move(f));
      continue;
    }
    Finding f = series_finding(s, s.points.front().x, s.points.back().x, "fit", w.n);
    // Rank: the fixed cost over the points where it dominates (x <= knee).
    for (const SeriesPoint& p : s.points) {
      if (p.x > *w.knee) continue;
      const double fixed = std::min(w.a, p.classification.parts.wall_s);
      f.explained_s += fixed;
      f.share += share_of_call(fixed, p) / n;
    }
    f.text = s.name() + ", " + s.parameter + " " + format_value(f.x_first) + "-" +
             format_value(f.x_last) + ": T = " + format_time(w.a) + " fixed per call + " +
             format_time(w.c) + per_unit;
    if (w.knee_note.empty())
      f.text += "; work overtakes the fixed cost at " + s.parameter + " ~ " +
                printf_string("%.0f", *w.knee);
    else  // knee below the range
      f.text += "; the work dominates from the smallest " + s.parameter + " on (knee ~ " +
                printf_string("%.3g", *w.knee) + ")";
    f.text += " (robust fit, scatter " + percent(w.spread) + ")";
    out.push_back(std::move(f));
  }
  std::stable_sort(out.begin(), out.end(), [](const Finding& l, const Finding& r) {
    if (l.share != r.share) return l.share > r.share;
    return l.explained_s > r.explained_s;
  });
  return out;
}

std::vector<Finding> findings(const std::vector<Point>& points, const MachineRoofs& roofs,
                              const FindingsOptions& options) {
  return series_findings(group_series(points, roofs, options.series), roofs, options);
}

}  // namespace timeroof::roofline
