#include "roofline/findings.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace timeroof::roofline {
namespace {

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// "53%"; below 1% one decimal ("0.4%"), so a small share is not shown as 0.
std::string percent(double fraction) {
  return format_number(fraction, hint::share);
}

std::string peak_name(PrecisionClass p) {
  switch (p) {
    case PrecisionClass::fp64:
      return "FP64 FMA peak";
    case PrecisionClass::fp32:
      return "FP32 FMA peak";
    case PrecisionClass::half:
      return "FP16/BF16 FMA peak";
    case PrecisionClass::tensor_fp16:
      return "FP16 Tensor Core peak";
    case PrecisionClass::tensor_bf16:
      return "BF16 Tensor Core peak";
    case PrecisionClass::tensor_tf32:
      return "TF32 Tensor Core peak";
    case PrecisionClass::tensor_fp8:
      return "FP8 Tensor Core peak";
    case PrecisionClass::tensor_int8:
      return "INT8 Tensor Core peak";
    case PrecisionClass::tensor_fp64:
      return "FP64 Tensor Core peak";
  }
  return "peak";
}

// The class of `tensor` (or not) with the largest share of T_compute.
std::optional<PrecisionClass> dominant(const PointBounds& b, bool tensor) {
  std::optional<PrecisionClass> best;
  double best_s = 0;
  for (PrecisionClass p : kAllPrecisionClasses) {
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
  if (s.points.size() == 1) {  // a lone point (lone_point_findings): all its parameters
    nlohmann::json params = s.fixed;
    const double x = s.points.front().x;
    params[name] = x == std::round(x) && std::fabs(x) < 1e15 ? nlohmann::json(std::llround(x))
                                                             : nlohmann::json(x);
    return params_text(params);
  }
  const double first = s.points.front().x, last = s.points.back().x;
  if (g.x_first == g.x_last) return name + " = " + format_value(g.x_first);
  if (g.x_first == first && g.x_last == last)
    return name + " " + format_value(first) + "-" + format_value(last);
  if (g.x_first == first) return name + " <= " + format_value(g.x_last);
  if (g.x_last == last) return name + " >= " + format_value(g.x_first);
  return name + " " + format_value(g.x_first) + "-" + format_value(g.x_last);
}

// The point of the group with the median time T (lower median).
const SeriesPoint& representative(const Series& s, const ClassSegment& g) {
  std::vector<const SeriesPoint*> members;
  for (std::size_t i = g.first; i <= g.last; ++i) members.push_back(&s.points[i]);
  std::sort(members.begin(), members.end(), [](const SeriesPoint* l, const SeriesPoint* r) {
    return l->classification.parts.time_s < r->classification.parts.time_s;
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
  const double t = p.classification.parts.time_s;
  return t > 0 ? std::clamp(explained_s / t, 0.0, 1.0) : 0.0;
}

// "T_stream 45 us".
std::string time_named(const Decomposition& d) {
  const std::string name =
      d.time_source == TimeSource::none ? "T_k + transfer" : to_string(d.time_source);
  return name + " " + format_time(d.time_s);
}

double explained(const SeriesPoint& p) {
  const PointBounds& b = p.bounds;
  const Classification& c = p.classification;
  switch (c.bottleneck) {
    case Bottleneck::launch_bound:
      if (c.rule == ClassRule::launch_roof)
        return std::min(c.parts.time_s, std::max(c.parts.host_overhead_s, b.t_launch.value_or(0)));
      return c.parts.host_overhead_s;
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

// "; kernels busy 10% of the call", or where the kernels exceed the call, that.
std::string busy_clause(const Decomposition& d) {
  if (d.time_s <= 0) return "";
  const double busy = d.kernel_s - d.kernel_overlap_s;
  if (busy > d.time_s)
    return "; kernel time exceeds the call by " + format_time(busy - d.time_s) +
           " (kernels overlapping, or passes at different clocks)";
  return "; kernels busy " + percent(busy / d.time_s) + " of the call";
}

// Where T_stream is flagged above T_call (classify.hpp), the clause that keeps a
// sentence quoting T_stream from contradicting the issue time or T_call beside it:
// `lead` + "70 us more than one synchronized call (T_call 242 us): that pass ran
// slower".
std::string slower_pass_clause(const PointBounds& b, const Decomposition& d,
                               const std::string& lead) {
  if (d.stream_vs_call != Separation::apart || !b.call) return "";
  return lead + format_time(d.stream_above_call_s) + " more than one synchronized call (T_call " +
         format_time(b.call->median_s) + "): that pass ran slower";
}

std::string launch_sentence(const SeriesPoint& p, const MachineRoofs& roofs,
                            const std::string& at) {
  const PointBounds& b = p.bounds;
  const Classification& c = p.classification;
  const Decomposition& d = c.parts;
  const std::string count =
      b.launches ? std::to_string(*b.launches) + (*b.launches == 1 ? " launch" : " launches")
                 : std::string("launches unknown");
  const std::string cost =
      roofs.launch.available() ? " x " + format_time(*roofs.launch.value) : std::string();
  std::string out = "launch-bound — ";
  switch (c.rule) {
    case ClassRule::host_issue: {
      std::string device_name;
      const double device = device_time(b, d, &device_name).value_or(0);
      out += "the host issues a call in " + format_time(b.issue_s().value_or(0)) +
             ", the GPU runs it in " + format_time(device) + " (" + device_name + ")" + at;
      if (d.time_source == TimeSource::stream)
        out += "; back to back a call takes " + format_time(d.time_s) + " (T_stream)" +
               slower_pass_clause(b, d, ", ");
      out += "; " + count + " per call";
      break;
    }
    case ClassRule::launch_roof:
      out += count + cost + " = " + format_time(b.t_launch.value_or(0)) + " = " +
             percent(b.t_launch.value_or(0) / d.time_s) + " of " + time_named(d) + at +
             ", above the kernels' roof " + format_time(b.t_kernel_roof) + busy_clause(d);
      break;
    default:  // overhead_share
      out += "host overhead and device gaps " + format_time(d.host_overhead_s) + " = " +
             percent(d.host_overhead_s / d.time_s) + " of " + time_named(d) + at +
             " (not measured separately); " + count + cost + busy_clause(d);
      break;
  }
  return out;
}

std::string sentence(const Series& s, const ClassSegment& g, const MachineRoofs& roofs) {
  const SeriesPoint& p = representative(s, g);
  const PointBounds& b = p.bounds;
  const Classification& c = p.classification;
  const double t = c.parts.time_s;
  const double tk = b.kernel_s.value_or(0);
  const std::string at = at_text(s, g, p);
  std::string out = s.name() + ", " + range_text(s, g) + ": ";
  switch (c.bottleneck) {
    case Bottleneck::launch_bound:
      out += launch_sentence(p, roofs, at);
      break;
    case Bottleneck::transfer_bound: {
      out += "transfer-bound — host<->device copies " + format_time(c.parts.transfer_s) + " = " +
             percent(c.parts.transfer_s / t) + " of " + time_named(c.parts) + at;
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
      out += std::string(display_name(l)) + "-bound at " + percent(tk > 0 ? tm / tk : 0) +
             " of the " + display_name(l) + " roof (" + format_time(tm) + " of " + format_time(tk) +
             " kernel time" + at + ")";
      const std::string cc = compute_clause(b, s.math_mode);
      if (!cc.empty()) out += "; " + cc;
      break;
    }
    case Bottleneck::compute_bound: {
      out += "compute-bound — " + (at.empty() ? "" : at.substr(1) + ", ");
      if (c.unit == ComputeUnit::tensor_core) {
        const auto tc = dominant(b, true);
        out += "Tensor Cores at " + percent(tk > 0 ? b.t_tensor / tk : 0) + " of the " +
               (tc ? peak_name(*tc) : std::string("Tensor Core peak")) + " (" +
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
             format_time(tk) + " of kernels in a " + format_time(t) + " call";
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

// The runs of consecutive points of `s` for which `holds` is true.
template <typename Predicate>
std::vector<ClassSegment> runs_where(const Series& s, const std::string& label, Predicate holds) {
  std::vector<ClassSegment> out;
  bool open = false;
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    if (!holds(s.points[i])) {
      open = false;
      continue;
    }
    if (!open) out.push_back({i, i, s.points[i].x, s.points[i].x, label});
    out.back().last = i;
    out.back().x_last = s.points[i].x;
    open = true;
  }
  return out;
}

// The CUDA-graph saving of a point where it is measured and resolved (see the
// header), else nullopt.
std::optional<double> graph_saving(const SeriesPoint& p, double min_gain) {
  const PointBounds& b = p.bounds;
  if (!b.stream || !b.graph || separation(*b.stream, *b.graph) != Separation::apart)
    return std::nullopt;
  if (b.stream->median_s < min_gain * b.graph->median_s) return std::nullopt;
  return b.stream->median_s - b.graph->median_s;
}

// "44.1 to 46.0 us": a 95% interval.
std::string interval_text(const TimeStats& t) {
  return format_time_interval(t.ci_low_s.value_or(t.median_s), t.ci_high_s.value_or(t.median_s));
}

std::string graph_sentence(const Series& s, const ClassSegment& g) {
  const SeriesPoint& p = representative(s, g);
  const TimeStats& stream = *p.bounds.stream;
  const TimeStats& graph = *p.bounds.graph;
  return s.name() + ", " + range_text(s, g) + ": a CUDA graph would take this call from " +
         format_time(stream.median_s) + " to " + format_time(graph.median_s) + " (" +
         printf_string("%.1f", stream.median_s / graph.median_s) + "x, measured" +
         at_text(s, g, p) + "; T_stream 95% interval " + interval_text(stream) + ", T_graph " +
         interval_text(graph) + ")" +
         slower_pass_clause(p.bounds, p.classification.parts, "; there T_stream is ");
}

// T_stream above T_call by more than the tolerance, beyond their intervals
// (classify.hpp); the excess, else 0.
double stream_excess(const SeriesPoint& p, double tolerance) {
  const Decomposition& d = p.classification.parts;
  return d.stream_vs_call == Separation::apart && d.stream_above_call_s > tolerance * d.time_s
             ? d.stream_above_call_s
             : 0;
}

// The representative point's note on T_stream above T_call (classify.hpp).
std::string stream_excess_sentence(const Series& s, const ClassSegment& g) {
  const SeriesPoint& p = representative(s, g);
  const std::string at = at_text(s, g, p);
  std::string why;
  for (const std::string& note : p.classification.parts.notes)
    if (note.rfind("T_stream ", 0) == 0) why = note;
  return s.name() + ", " + range_text(s, g) + ": " + (at.empty() ? "" : at.substr(1) + ", ") + why;
}

// Measured parts above T by more than the tolerance (classify.hpp), either cause.
double excess(const SeriesPoint& p, double tolerance) {
  const Decomposition& d = p.classification.parts;
  const double above = d.graph_above_time_s + d.kernels_above_device_s;
  return above > tolerance * d.time_s ? above : 0;
}

// The notes of the decomposition that say why parts exceed T (classify.hpp): of
// T_graph above T, and of the kernels above the device time.
std::string excess_sentence(const Series& s, const ClassSegment& g) {
  const SeriesPoint& p = representative(s, g);
  const std::string at = at_text(s, g, p);
  std::string why;
  for (const std::string& note : p.classification.parts.notes)
    if ((note.rfind("T_graph ", 0) == 0 || note.rfind("T_k ", 0) == 0) &&
        note.find("exceed") != std::string::npos)
      why += (why.empty() ? "" : "; ") + note;
  return s.name() + ", " + range_text(s, g) + ": " + (at.empty() ? "" : at.substr(1) + ", ") + why;
}

// "T_stream = 25 us fixed per call + 0.60 us per sample (95% interval ...)",
// "T_stream flat within +-6.1 us (3% of its median 187 us)": a fit, never with
// a slope its interval does not resolve.
std::string fit_text(const LinearFit& f, const std::string& y, const std::string& per_unit,
                     double y_median) {
  if (f.flat) {
    return y + " flat within +-" + format_time(f.flat_within) + " (" +
           percent(y_median > 0 ? f.flat_within / y_median : 0) + " of its median " +
           format_time(y_median) + ")";
  }
  const bool fixed = f.knee_note.find("no fixed cost") == std::string::npos;
  std::string out = y + " = " + (fixed ? format_time(f.a) + " fixed per call + " : "") +
                    format_time_3(f.c) + per_unit;
  if (f.c_low && f.c_high)
    out += " (95% interval " + format_time_interval(*f.c_low, *f.c_high) + ")";
  if (!fixed) out += "; no fixed cost resolved";
  return out;
}

// The knee clause of a fit that is not flat: quoted with R2, or why not.
std::string knee_text(const LinearFit& f, const std::string& parameter) {
  char r2[32];
  std::snprintf(r2, sizeof r2, "R2 %.2f", f.r2.value_or(0));
  if (!f.knee) {
    if (f.knee_note.find("R2") != std::string::npos) return "; " + f.knee_note;
    return "";
  }
  if (*f.knee > f.x_max)
    return "; the fixed cost dominates up to " + parameter + " " + format_value(f.x_max) +
           " (knee ~ " + printf_string("%.0f", *f.knee) + ", " + r2 + ")";
  if (*f.knee < f.x_min)
    return "; the work dominates from the smallest " + parameter + " on (knee ~ " +
           printf_string("%.3g", *f.knee) + ", " + r2 + ")";
  return "; work overtakes the fixed cost at " + parameter + " ~ " +
         printf_string("%.0f", *f.knee) + " (" + r2 + ", scatter " + percent(f.spread) + ")";
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

// Counted FLOPs above the analytic ones (see the header), where they are.
struct RedundantWork {
  double counted = 0, analytic = 0;
  double cost_s = 0;  // T_k x (counted - analytic) / counted
};

std::optional<RedundantWork> redundant_work(const SeriesPoint& sp, const Point& point,
                                            double min_ratio) {
  const PointBounds& b = sp.bounds;
  if (b.work_source != Source::counters || point.flops <= 0 ||
      b.total_work <= min_ratio * point.flops)
    return std::nullopt;
  const double excess_share = (b.total_work - point.flops) / b.total_work;
  return RedundantWork{b.total_work, point.flops, b.kernel_s.value_or(0) * excess_share};
}

// Tensor-Core FLOPs above the analytic ones at a point the redundant-work finding
// leaves alone (see the header): MMAs over zero-padded tiles.
struct TilePadding {
  double tensor = 0, analytic = 0;
  double cost_s = 0;  // T_k x (tensor - analytic) / counted
};

std::optional<TilePadding> tile_padding(const SeriesPoint& sp, const Point& point,
                                        const FindingsOptions& options) {
  const PointBounds& b = sp.bounds;
  if (redundant_work(sp, point, options.redundant_min_ratio)) return std::nullopt;
  if (b.work_source != Source::counters || point.flops <= 0 || b.total_work <= 0)
    return std::nullopt;
  const double tensor = b.total_work * b.tensor_share.value_or(0);
  if (tensor <= options.tile_padding_min_ratio * point.flops) return std::nullopt;
  return TilePadding{tensor, point.flops,
                     b.kernel_s.value_or(0) * (tensor - point.flops) / b.total_work};
}

// "sm80_xmma_dgrad_implicit_gemm_... does 99% of the counted work (1 launch)": the
// kernel (short name, its launches together) with the most counted work; "" without
// per-kernel counters.
std::string top_kernel_clause(const PointBounds& b) {
  std::map<std::string, std::pair<double, int>> by_name;  // work, launches
  double total = 0;
  for (const KernelBound& k : b.kernel_bounds) {
    double work = 0;
    for (double w : k.work) work += w;
    auto& [sum, launches] = by_name[short_kernel_name(k.name)];
    sum += work;
    ++launches;
    total += work;
  }
  const auto top = std::max_element(
      by_name.begin(), by_name.end(),
      [](const auto& l, const auto& r) { return l.second.first < r.second.first; });
  if (top == by_name.end() || total <= 0) return "";
  const int launches = top->second.second;
  return top->first + " does " + percent(top->second.first / total) + " of the counted work (" +
         std::to_string(launches) + (launches == 1 ? " launch)" : " launches)");
}

// Where the extra work runs, and what it generally is. Tensor-Core counters count
// whole MMA tiles, so Tensor-Core FLOPs alone above the analytic ones are MMAs over
// tiles padded with zeros (fp16 LSTM on both samples: K = 16 or 32 padded to the
// 64-deep tiles of nvjet_sm90_hsh_64x8_64x16, 2.55x; the stride-2 fp16 dgrad, 4.00x).
// The CUDA-core counters count every FP instruction (an FFMA as 2): padded or
// split-K tiles, partial-sum reductions and epilogues, and the several FLOPs of each
// exp, sigmoid, tanh or division that an analytic count takes as 1 (fp32 LSTM on
// both samples: the recurrent sgemm_largek_lds64 runs 34 FFMAs and 2 FMULs per
// output for 16 multiply-adds, 2.19x; elemWiseRNNcell ~57 FLOPs per hidden unit
// against the analytic 17, 3.38x).
std::string extra_work_clause(const PointBounds& b, double analytic) {
  const double tensor = b.total_work * b.tensor_share.value_or(0);
  if (tensor > analytic)
    return "; the Tensor Cores alone execute " + format_number(tensor / analytic, hint::ratio) +
           " the FLOPs the operator needs: MMAs over tiles padded with zeros (the counters "
           "count whole tiles)";
  return "; the extra is CUDA-core FP instructions, which the counters count one by one: "
         "multiply-adds over zero-padded or split-K tiles, partial-sum reductions and "
         "epilogues, and the several FLOPs of each exp, sigmoid, tanh or division (1 in "
         "the analytic count)";
}

std::string tile_padding_sentence(const Series& s, const ClassSegment& g,
                                  const std::vector<Point>& points,
                                  const FindingsOptions& options) {
  const SeriesPoint& p = representative(s, g);
  const std::string at = at_text(s, g, p);
  std::string out = s.name() + ", " + range_text(s, g) + ": padded Tensor-Core tiles — " +
                    (at.empty() ? "" : at.substr(1) + " ");
  const auto t = tile_padding(p, points.at(p.index), options);
  if (!t) return out + "the representative point runs no padded tiles";
  out += "the Tensor Cores execute " + format_si(t->tensor, "FLOP") + ", " +
         format_number(t->tensor / t->analytic, hint::ratio) + " the " +
         format_si(t->analytic, "FLOP") + " the operator needs (" +
         format_si(t->tensor - t->analytic, "FLOP") +
         " on tile parts the operator does not need: zeros where a dimension is not a "
         "multiple of the kernel's tile, or scores a causal mask hides in the tiles on its "
         "diagonal)";
  const std::string kernel = top_kernel_clause(p.bounds);
  if (!kernel.empty()) out += "; " + kernel;
  if (p.bounds.kernel_s)
    out += "; ~ " + format_time(t->cost_s) + " of the " + format_time(*p.bounds.kernel_s) +
           " kernel time";
  return out;
}

std::string redundant_sentence(const Series& s, const ClassSegment& g,
                               const std::vector<Point>& points, double min_ratio) {
  const SeriesPoint& p = representative(s, g);
  const std::string at = at_text(s, g, p);
  std::string out = s.name() + ", " + range_text(s, g) + ": redundant work — " +
                    (at.empty() ? "" : at.substr(1) + " ");
  const auto r = redundant_work(p, points.at(p.index), min_ratio);
  if (!r) return out + "the representative point does no redundant work";
  out += "the kernels execute " + format_si(r->counted, "FLOP") + ", " +
         format_number(r->counted / r->analytic, hint::ratio) + " the " +
         format_si(r->analytic, "FLOP") + " the operator needs (" +
         format_si(r->counted - r->analytic, "FLOP") + " extra)" +
         extra_work_clause(p.bounds, r->analytic);
  const std::string kernel = top_kernel_clause(p.bounds);
  if (!kernel.empty()) out += "; " + kernel;
  if (p.bounds.kernel_s)
    out += "; the extra work costs ~ " + format_time(r->cost_s) + " of the " +
           format_time(*p.bounds.kernel_s) + " kernel time";
  return out;
}

// "a, b, c" of at most three names, then how many more.
std::string name_list(const std::set<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  std::size_t shown = 0;
  for (const std::string& n : names) {
    if (shown == 3) return out + " and " + std::to_string(names.size() - shown) + " more";
    out += (shown++ ? ", " : "") + n;
  }
  return out;
}

std::set<std::string> kernel_names(const Point& p) {
  std::set<std::string> out;
  for (const KernelRecord& k : p.kernels) out.insert(k.name);
  return out;
}

// The short names of the kernels of `from` that `to` does not run.
std::set<std::string> short_names_only_in(const std::set<std::string>& from,
                                          const std::set<std::string>& to) {
  std::set<std::string> out;
  for (const std::string& n : from)
    if (!to.count(n)) out.insert(short_kernel_name(n));
  return out;
}

// A kernel or algorithm switch between consecutive points (see the header), with
// T's step beyond the fit's trend.
struct KernelSwitch {
  double trend = 1;   // fit(x_after) / fit(x_before)
  double beyond = 0;  // |T_after - trend x T_before|, s
};

std::optional<KernelSwitch> kernel_switch(const SeriesPoint& before, const SeriesPoint& after,
                                          const std::vector<Point>& points, const LinearFit& fit,
                                          double min_step) {
  const Point& a = points.at(before.index);
  const Point& b = points.at(after.index);
  if (a.algorithm == b.algorithm && kernel_names(a) == kernel_names(b)) return std::nullopt;
  const auto& ta = before.bounds.time_stats();
  const auto& tb = after.bounds.time_stats();
  if (!ta || !tb || ta->median_s <= 0) return std::nullopt;
  const bool up = tb->median_s > ta->median_s;
  if (separation(up ? *tb : *ta, up ? *ta : *tb) != Separation::apart) return std::nullopt;
  const double fa = fit.at(before.x), fb = fit.at(after.x);
  const double trend = fa > 0 && fb > 0 ? fb / fa : 1;
  const double step = std::log(tb->median_s / ta->median_s / trend);
  // The kernels' own time (T_graph, else T_k) steps the same way: a step of T
  // they do not show is the host's (launch-bound calls), not the switch's.
  const auto device = [](const PointBounds& p) { return p.graph_s() ? p.graph_s() : p.kernel_s; };
  const auto da = device(before.bounds), db = device(after.bounds);
  if (!da || !db || *da <= 0 || *db <= 0) return std::nullopt;
  const double device_step = std::log(*db / *da / trend);
  const double least = std::log1p(min_step);
  if (std::fabs(step) <= least || std::fabs(device_step) <= least || step * device_step < 0)
    return std::nullopt;
  return KernelSwitch{trend, std::fabs(tb->median_s - trend * ta->median_s)};
}

std::string switch_sentence(const Series& s, const SeriesPoint& before, const SeriesPoint& after,
                            const std::vector<Point>& points, const KernelSwitch& k) {
  const Point& a = points.at(before.index);
  const Point& b = points.at(after.index);
  const std::set<std::string> ka = kernel_names(a), kb = kernel_names(b);
  const std::set<std::string> removed = short_names_only_in(ka, kb);
  const std::set<std::string> added = short_names_only_in(kb, ka);
  std::string out = s.name() + ": at " + s.parameter + " " + format_value(before.x) + " -> " +
                    format_value(after.x) + " ";
  if (a.algorithm != b.algorithm)
    out += "the algorithm changes from " + a.algorithm + " to " + b.algorithm + ", ";
  if (removed.empty() || added.empty()) {
    if (ka != kb)
      out += (removed.empty() ? "the kernels add " : "the kernels drop ") +
             name_list(removed.empty() ? added : removed);
    else
      out += "the kernels stay the same";
  } else {
    out += "the kernels change from " + name_list(removed) + " to " + name_list(added);
    if (removed == added) out += " (other template arguments)";
  }
  const TimeStats& ta = *before.bounds.time_stats();
  const TimeStats& tb = *after.bounds.time_stats();
  return out + " and " + to_string(before.bounds.time_source) + " steps from " +
         format_time(ta.median_s) + " to " + format_time(tb.median_s) + " (" +
         format_number(tb.median_s / ta.median_s, hint::ratio) + ", the series' fit " +
         format_number(k.trend, hint::ratio) + "; 95% intervals " + interval_text(ta) + " and " +
         interval_text(tb) + ")";
}

// Layout transforms and fills (see the header), by short name.
bool is_helper_kernel(const std::string& short_name) {
  static const std::vector<std::string> patterns = {
      "tonhwc", "tonchw", "tofolded", "transpose", "convert", "padding", "fill", "memset", "init"};
  std::string lower = short_name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return lower.find(p) != std::string::npos; });
}

// Traced time per helper kernel (short name) and of all kernels, per call.
struct HelperTime {
  std::map<std::string, double> by_name;
  double helpers_s = 0, kernels_s = 0;
  double share() const { return kernels_s > 0 ? helpers_s / kernels_s : 0; }
};

HelperTime helper_time(const Point& p) {
  HelperTime out;
  for (const KernelRecord& k : p.kernels) {
    out.kernels_s += k.duration_s;
    const std::string name = short_kernel_name(k.name);
    if (!is_helper_kernel(name)) continue;
    out.by_name[name] += k.duration_s;
    out.helpers_s += k.duration_s;
  }
  return out;
}

std::string helper_sentence(const Series& s, const ClassSegment& g,
                            const std::vector<Point>& points) {
  const SeriesPoint& p = representative(s, g);
  const HelperTime h = helper_time(points.at(p.index));
  std::vector<std::pair<std::string, double>> ranked(h.by_name.begin(), h.by_name.end());
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& l, const auto& r) { return l.second > r.second; });
  std::string names;
  for (const auto& [name, seconds] : ranked)
    names += (names.empty() ? "" : ", ") + name + " " + percent(seconds / h.kernels_s);
  return s.name() + ", " + range_text(s, g) + ": helper kernels (layout transforms, fills) take " +
         percent(h.share()) + " of the kernel time" + at_text(s, g, p) + " (" +
         format_time(h.helpers_s) + " of " + format_time(h.kernels_s) + " traced): " + names;
}

// T off the series' fit by more than the thresholds (see the header): |T - fit(x)|,
// else 0.
double off_fit(const SeriesPoint& p, const LinearFit& fit, double min_residual) {
  const auto& t = p.bounds.time_stats();
  const double expected = fit.at(p.x);
  if (!t || t->median_s <= 0 || expected <= 0 || !t->ci_low_s || !t->ci_high_s) return 0;
  if (*t->ci_low_s <= expected && expected <= *t->ci_high_s) return 0;
  const double off = std::fabs(t->median_s - expected);
  return off / t->median_s > std::max(min_residual, 3 * fit.spread) ? off : 0;
}

std::string off_fit_sentence(const Series& s, const ClassSegment& g, const LinearFit& fit) {
  const SeriesPoint& p = representative(s, g);
  const TimeStats& t = *p.bounds.time_stats();
  const std::string at = at_text(s, g, p);
  const double expected = fit.at(p.x);
  return s.name() + ", " + range_text(s, g) + ": off the series' fit — " +
         (at.empty() ? "" : at.substr(1) + " ") + to_string(p.bounds.time_source) + " " +
         format_time(t.median_s) + " against the fit's " + format_time(expected) + " (" +
         format_number(t.median_s / expected, hint::ratio) + "; 95% interval " + interval_text(t) +
         ", the fit's scatter " + percent(fit.spread) + ")";
}

// A finding about `s` over the group `g`, with nothing explained yet.
Finding series_finding(const Series& s, const ClassSegment& g) {
  Finding f;
  f.series = s.name();
  f.sweep = s.sweep;
  f.parameter = s.parameter;
  f.x_first = g.x_first;
  f.x_last = g.x_last;
  f.label = g.label;
  f.points = g.last - g.first + 1;
  return f;
}

}  // namespace

std::vector<Finding> series_findings(const std::vector<Point>& points,
                                     const std::vector<Series>& series, const MachineRoofs& roofs,
                                     const FindingsOptions& options) {
  std::vector<SeriesFit> fits;
  for (const Series& s : series) fits.push_back(fit_series(s, options.fit));
  return series_findings(points, series, fits, roofs, options);
}

std::vector<Finding> series_findings(const std::vector<Point>& points,
                                     const std::vector<Series>& series,
                                     const std::vector<SeriesFit>& fits, const MachineRoofs& roofs,
                                     const FindingsOptions& options) {
  std::vector<Finding> out;
  for (std::size_t si = 0; si < series.size(); ++si) {
    const Series& s = series[si];
    if (s.points.empty()) continue;
    const double n = static_cast<double>(s.points.size());
    // A finding per group, explaining per point `value(point)` seconds.
    auto add = [&](const ClassSegment& g, const std::string& text, auto value) {
      Finding f = series_finding(s, g);
      for (std::size_t i = g.first; i <= g.last; ++i) {
        const double e = value(s.points[i]);
        f.explained_s += e;
        f.share += share_of_call(e, s.points[i]) / n;
      }
      f.text = text;
      out.push_back(std::move(f));
    };
    for (const ClassSegment& g : class_segments(s)) add(g, sentence(s, g, roofs), explained);

    const auto saving = [&](const SeriesPoint& p) {
      return graph_saving(p, options.graph_min_gain).value_or(0);
    };
    for (const ClassSegment& g : runs_where(s, "cuda_graph", [&](const SeriesPoint& p) {
           return graph_saving(p, options.graph_min_gain).has_value();
         }))
      add(g, graph_sentence(s, g), saving);

    const auto above = [&](const SeriesPoint& p) { return excess(p, options.pass_tolerance); };
    for (const ClassSegment& g :
         runs_where(s, "parts_above_time", [&](const SeriesPoint& p) { return above(p) > 0; }))
      add(g, excess_sentence(s, g), above);

    const auto slower = [&](const SeriesPoint& p) {
      return stream_excess(p, options.pass_tolerance);
    };
    for (const ClassSegment& g :
         runs_where(s, "stream_above_call", [&](const SeriesPoint& p) { return slower(p) > 0; }))
      add(g, stream_excess_sentence(s, g), slower);

    const auto redundant = [&](const SeriesPoint& p) {
      return redundant_work(p, points.at(p.index), options.redundant_min_ratio);
    };
    const auto redundant_cost = [&](const SeriesPoint& p) {
      const auto r = redundant(p);
      return r ? r->cost_s : 0.0;
    };
    for (const ClassSegment& g : runs_where(
             s, "redundant_work", [&](const SeriesPoint& p) { return redundant(p).has_value(); }))
      add(g, redundant_sentence(s, g, points, options.redundant_min_ratio), redundant_cost);

    const auto padding_cost = [&](const SeriesPoint& p) {
      const auto t = tile_padding(p, points.at(p.index), options);
      return t ? t->cost_s : 0.0;
    };
    for (const ClassSegment& g : runs_where(s, "tile_padding", [&](const SeriesPoint& p) {
           return tile_padding(p, points.at(p.index), options).has_value();
         }))
      add(g, tile_padding_sentence(s, g, points, options), padding_cost);

    // Explains the helpers' share of T_k (traced durations scale to T_k).
    const auto helper_cost = [&](const SeriesPoint& p) {
      const double share = helper_time(points.at(p.index)).share();
      return share > options.helper_min_share ? share * p.bounds.kernel_s.value_or(0) : 0.0;
    };
    for (const ClassSegment& g :
         runs_where(s, "helper_kernels", [&](const SeriesPoint& p) { return helper_cost(p) > 0; }))
      add(g, helper_sentence(s, g, points), helper_cost);

    const SeriesFit& fit = fits.at(si);
    if (fit.time.n >= 3) {
      const auto off = [&](const SeriesPoint& p) {
        return off_fit(p, fit.time, options.outlier_min_residual);
      };
      for (const ClassSegment& g :
           runs_where(s, "off_fit", [&](const SeriesPoint& p) { return off(p) > 0; }))
        add(g, off_fit_sentence(s, g, fit.time), off);

      for (std::size_t i = 1; i < s.points.size(); ++i) {
        const SeriesPoint &before = s.points[i - 1], &after = s.points[i];
        const auto k = kernel_switch(before, after, points, fit.time, options.switch_min_step);
        if (!k) continue;
        const ClassSegment step{i - 1, i, before.x, after.x, "kernel_switch"};
        add(step, switch_sentence(s, before, after, points, *k),
            [&](const SeriesPoint& p) { return &p == &after ? k->beyond : 0.0; });
      }
    }

    if (!options.include_fits || s.points.size() < 3) continue;
    const LinearFit& w = fit.time;
    if (w.n < 3) continue;
    const std::string per_unit =
        s.parameter == "batch" ? std::string(" per sample") : " per unit of " + s.parameter;
    std::vector<double> times, graphs;
    for (const SeriesPoint& p : s.points) {
      if (p.bounds.time_s) times.push_back(*p.bounds.time_s);
      if (const auto g = p.bounds.graph_s()) graphs.push_back(*g);
    }
    const std::string y =
        fit.time_source == TimeSource::none ? std::string("T") : to_string(fit.time_source);
    const ClassSegment whole{0, s.points.size() - 1, s.points.front().x, s.points.back().x, "fit"};
    std::string text = s.name() + ", " + range_text(s, whole) + ": " +
                       fit_text(w, y, per_unit, median_of(times)) +
                       (w.flat ? "" : knee_text(w, s.parameter));
    if (fit.graph) text += "; " + fit_text(*fit.graph, "T_graph", per_unit, median_of(graphs));
    // Explains the fixed cost where it dominates: at or below the knee, everywhere
    // in a flat series or one whose knee lies beyond the range; nothing without one.
    const bool fixed = !w.flat && w.knee_note.find("no fixed cost") == std::string::npos;
    const double level = w.flat ? median_of(times) : fixed ? w.a : 0;
    add(whole, text, [&](const SeriesPoint& p) {
      if (w.knee && p.x > *w.knee) return 0.0;
      if (!w.flat && !w.knee) return 0.0;
      return std::min(level, p.classification.parts.time_s);
    });
  }
  merge_findings(out, {});
  return out;
}

std::vector<Finding> lone_point_findings(const std::vector<Point>& points,
                                         const std::vector<Series>& lone, const MachineRoofs& roofs,
                                         const FindingsOptions& options) {
  // One finding per operator, precision and label: the point explaining most, and how
  // many more lone points show the same (a default sweep has dozens of lone points).
  std::vector<Finding> out;
  std::map<std::pair<std::string, std::string>, std::vector<Finding>> by_kind;
  for (Finding& f : series_findings(points, lone, roofs, options))
    if (f.label == "redundant_work" || f.label == "tile_padding" || f.label == "helper_kernels")
      by_kind[{f.series, f.label}].push_back(std::move(f));  // most explained first
  for (auto& [kind, found] : by_kind) {
    Finding f = std::move(found.front());
    for (std::size_t i = 1; i < found.size(); ++i) {
      f.explained_s += found[i].explained_s;
      f.share += found[i].share;
      f.points += found[i].points;
    }
    f.share /= static_cast<double>(found.size());  // each the share of its own call
    if (found.size() > 1)
      f.text += " (the same at " + std::to_string(found.size() - 1) + " more " + f.series +
                (found.size() == 2 ? " point" : " points") +
                " outside any batch series: " + format_time(f.explained_s) + " explained in all)";
    out.push_back(std::move(f));
  }
  return out;
}

void merge_findings(std::vector<Finding>& into, std::vector<Finding> more) {
  into.insert(into.end(), std::make_move_iterator(more.begin()),
              std::make_move_iterator(more.end()));
  std::stable_sort(into.begin(), into.end(), [](const Finding& l, const Finding& r) {
    if (l.explained_s != r.explained_s) return l.explained_s > r.explained_s;
    return l.share > r.share;
  });
}

namespace {

// "cutlass__5x_cudnn::Kernel" of "_ZN17cutlass__5x_cudnn6KernelINS_...": the
// scopes of an Itanium-mangled nested name, up to its template arguments.
std::string demangled_scopes(const std::string& name) {
  std::string out;
  std::size_t at = 3;  // past "_ZN"
  while (at < name.size() && std::isdigit(static_cast<unsigned char>(name[at]))) {
    std::size_t digits = 0;
    const std::size_t length = std::stoul(name.substr(at), &digits);
    at += digits;
    if (at + length > name.size()) break;
    out += (out.empty() ? "" : "::") + name.substr(at, length);
    at += length;
  }
  return out;
}

}  // namespace

std::vector<RoofFinding> roof_findings(const Machine& machine, const FindingsOptions& options) {
  std::vector<RoofFinding> out;
  for (const Ceiling& c : machine.ceilings) {
    if (c.theoretical && *c.theoretical > 0 &&
        c.measured / *c.theoretical > options.roof_max_of_peak)
      out.push_back({c.name, "roof_above_peak", c.measured / *c.theoretical,
                     options.roof_max_of_peak,
                     c.name + " measures " + format_si(c.measured, c.unit) + ", " +
                         format_number(c.measured / *c.theoretical, hint::percent_1) +
                         " of its theoretical " + format_si(*c.theoretical, c.unit) +
                         (c.sm_clock_hz ? " (at SM " + format_si(*c.sm_clock_hz, "Hz") + ")" : "") +
                         ": a roof cannot pass its peak, so the peak's clock or the kernel's "
                         "count is off, and so is every efficiency quoted against it"});
  }
  for (const Ceiling& c : machine.ceilings) {
    if (c.spread > options.roof_max_spread)
      out.push_back(
          {c.name, "roof_spread", c.spread, options.roof_max_spread,
           c.name + ": its " + std::to_string(c.repeats) + " repeats spread " +
               format_number(c.spread, hint::percent_1) + " ((max - min) / median), above " +
               format_number(options.roof_max_spread, hint::percent_1) +
               ": the roof moved while it was measured (median " + format_si(c.measured, c.unit) +
               "); bounds on this roof carry that uncertainty"});
  }
  return out;
}

std::string short_kernel_name(const std::string& name) {
  if (name.rfind("_ZN", 0) == 0) {
    if (const std::string scopes = demangled_scopes(name); !scopes.empty())
      return short_kernel_name(scopes);
  }
  // Drop every template argument and parameter list, nested or not.
  std::string flat;
  int depth = 0;
  for (char c : name) {
    if (c == '<' || c == '(') {
      ++depth;
    } else if (c == '>' || c == ')') {
      depth = std::max(0, depth - 1);
    } else if (depth == 0) {
      flat += c;
    }
  }
  while (!flat.empty() && flat.back() == ' ') flat.pop_back();
  // The last word (the return type goes), then its last scope; an xmma kernel's
  // name up to its launch suffix ("_execute_kernel__5x_cudnn").
  std::string word = flat.substr(flat.find_last_of(' ') + 1);
  if (const std::size_t suffix = word.find("_execute"); suffix != std::string::npos && suffix > 0)
    word.resize(suffix);
  const std::size_t scope = word.rfind("::");
  if (scope == std::string::npos) return word.empty() ? name : word;
  const std::string last = word.substr(scope + 2);
  if (last != "kernel" && last != "Kernel") return last;
  const std::size_t outer = word.rfind("::", scope == 0 ? 0 : scope - 1);
  return outer == std::string::npos || outer >= scope ? word : word.substr(outer + 2);
}

std::vector<Finding> findings(const std::vector<Point>& points, const MachineRoofs& roofs,
                              const FindingsOptions& options) {
  const PointModel model = [&](std::size_t i) {
    PointBounds b = point_bounds(points[i], roofs, options.series.bounds);
    Classification c = classify(b, options.series.thresholds);
    return std::make_pair(std::move(b), std::move(c));
  };
  const GroupedSeries grouped = group_series_and_lone(points, model, options.series);
  std::vector<Finding> out = series_findings(points, grouped.series, roofs, options);
  merge_findings(out, lone_point_findings(points, grouped.lone, roofs, options));
  return out;
}

}  // namespace timeroof::roofline
