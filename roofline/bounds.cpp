#include "roofline/bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "core/format.hpp"
#include "core/quantities.hpp"

namespace timeroof::roofline {

namespace {

using Quantities = std::map<std::string, double>;

std::optional<double> counter(const Quantities& q, Quantity quantity) {
  const auto it = q.find(to_string(quantity));
  if (it == q.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

std::optional<double> counter(const Point& point, Quantity quantity) {
  return counter(point.counters, quantity);
}

// W_p from catalog quantities; false when no work quantity is there.
bool read_work(const Quantities& q, std::array<double, kPrecisionClassCount>& work) {
  bool any = false;
  for (PrecisionClass p : kAllPrecisionClasses) {
    if (const auto w = counter(q, work_quantity(p))) {
      work[static_cast<std::size_t>(p)] = std::max(0.0, *w);
      any = true;
    }
  }
  return any;
}

// Q_l from catalog quantities (DRAM = read + write); absent levels stay nullopt.
std::array<std::optional<double>, kLevelCount> read_bytes(const Quantities& q) {
  std::array<std::optional<double>, kLevelCount> bytes;
  bytes[static_cast<std::size_t>(Level::l1)] = counter(q, Quantity::l1_bytes);
  bytes[static_cast<std::size_t>(Level::l2)] = counter(q, Quantity::l2_bytes);
  const auto read = counter(q, Quantity::dram_read_bytes);
  const auto write = counter(q, Quantity::dram_write_bytes);
  if (read || write)
    bytes[static_cast<std::size_t>(Level::dram)] = read.value_or(0) + write.value_or(0);
  return bytes;
}

std::string number(double v) {
  return format_number(v, hint::significant_3);
}

// The L1 rule (header): why L1 is left out, or "" when it is used.
std::string l1_exclusion(const std::array<std::optional<double>, kLevelCount>& bytes,
                         double min_fraction) {
  const auto& l1 = bytes[static_cast<std::size_t>(Level::l1)];
  const auto& l2 = bytes[static_cast<std::size_t>(Level::l2)];
  if (!l1 || !l2 || *l2 <= 0 || *l1 >= min_fraction * *l2) return "";
  return "L1 not measured meaningfully (TMA): L1 bytes " + number(*l1) + " < " +
         number(min_fraction) + " x L2 bytes " + number(*l2) +
         "; loads that bypass the L1 counter (TMA, wgmma via shared memory) are missing";
}

std::optional<double> positive(const std::optional<double>& v) {
  if (v && std::isfinite(*v) && *v > 0) return v;
  return std::nullopt;
}

// A time that was measured: a positive, finite median.
std::optional<TimeStats> measured(const std::optional<TimeStats>& stats) {
  if (stats && positive(stats->median_s)) return stats;
  return std::nullopt;
}

// details["trace"][key], what the trace pass recorded; nullptr where it is absent.
const nlohmann::json* trace_detail(const Point& point, const char* key) {
  const nlohmann::json& d = point.details;
  if (!d.is_object() || !d.contains("trace") || !d.at("trace").is_object()) return nullptr;
  const nlohmann::json& trace = d.at("trace");
  const auto it = trace.find(key);
  return it == trace.end() ? nullptr : &*it;
}

// details["trace"]["kernel_busy_s"] where the trace pass recorded it.
std::optional<double> kernel_busy(const Point& point) {
  const nlohmann::json* busy = trace_detail(point, "kernel_busy_s");
  if (!busy || !busy->is_number()) return std::nullopt;
  return positive(busy->get<double>());
}

// The fastest and slowest traced call's summed kernel time, where the trace
// kept two or more and they hold T_k (else nullopt: runs recorded before the
// trace kept them, or T_k taken from elsewhere).
std::optional<std::pair<double, double>> kernel_interval(const Point& point, double kernel_s) {
  const nlohmann::json* calls = trace_detail(point, "kernel_time_per_call_s");
  if (!calls || !calls->is_array() || calls->size() < 2) return std::nullopt;
  double low = std::numeric_limits<double>::infinity(), high = 0;
  for (const nlohmann::json& v : *calls) {
    if (!v.is_number() || !positive(v.get<double>())) return std::nullopt;
    low = std::min(low, v.get<double>());
    high = std::max(high, v.get<double>());
  }
  if (kernel_s < low || kernel_s > high) return std::nullopt;
  return std::make_pair(low, high);
}

}  // namespace

std::string format_time_stats(const std::optional<TimeStats>& stats) {
  if (!stats) return "-";
  std::string out = format_time(stats->median_s);
  if (const auto ci = stats->relative_ci())
    out += " +-" + format_number(*ci, hint::relative_interval);
  return out;
}

const char* to_string(BoundScope scope) {
  switch (scope) {
    case BoundScope::per_kernel:
      return "per-kernel";
    case BoundScope::per_operator:
      return "per-operator";
  }
  return "?";
}

bool has_counters(const KernelRecord& kernel) {
  std::array<double, kPrecisionClassCount> work{};
  if (read_work(kernel.metrics, work)) return true;
  for (const auto& q : read_bytes(kernel.metrics))
    if (q) return true;
  return false;
}

KernelBound kernel_bound(const KernelRecord& kernel, const MachineRoofs& roofs,
                         const BoundsOptions& options) {
  KernelBound k;
  k.name = kernel.name;
  k.duration_s = kernel.duration_s;
  read_work(kernel.metrics, k.work);
  for (PrecisionClass p : kAllPrecisionClasses) {
    const double w = k.work[static_cast<std::size_t>(p)];
    if (w > 0 && roofs.peak(p).available()) k.t_compute += w / *roofs.peak(p).value;
  }
  k.bytes = read_bytes(kernel.metrics);
  k.l1_excluded = !l1_exclusion(k.bytes, options.l1_min_fraction).empty();
  k.t_bound = k.t_compute;
  if (k.t_compute > 0) k.limiting = "compute";
  for (Level l : kAllLevels) {
    const std::size_t i = static_cast<std::size_t>(l);
    if (!k.bytes[i] || !roofs.bandwidth(l).available()) continue;
    if (l == Level::l1 && k.l1_excluded) continue;
    k.t_mem[i] = *k.bytes[i] / *roofs.bandwidth(l).value;
    if (*k.t_mem[i] > k.t_bound) {
      k.t_bound = *k.t_mem[i];
      k.limiting = to_string(l);
    }
  }
  return k;
}

std::string transfer_roofs_text(const PointBounds& bounds) {
  std::string out;
  for (const TransferBounds& x : bounds.transfers) {
    if (!x.bandwidth) continue;
    out += (out.empty() ? "" : ", ") + std::string(to_string(bounds.transfer_host)) + " " +
           direction_name(x.direction) + " roof " + format_si(*x.bandwidth, "B/s");
  }
  return out;
}

const char* to_string(TimeSource source) {
  switch (source) {
    case TimeSource::stream:
      return "T_stream";
    case TimeSource::call:
      return "T_call";
    case TimeSource::none:
      return "none";
  }
  return "?";
}

Separation separation(const TimeStats& slower, const TimeStats& faster) {
  if (!slower.ci_low_s || !faster.ci_high_s) return Separation::unknown;
  return *slower.ci_low_s > *faster.ci_high_s ? Separation::apart : Separation::overlapping;
}

const char* to_string(Source source) {
  switch (source) {
    case Source::counters:
      return "counters";
    case Source::analytic:
      return "analytic";
    case Source::none:
      return "none";
  }
  return "?";
}

std::optional<PrecisionClass> analytic_class(const std::string& precision,
                                             const std::string& math_mode) {
  const std::optional<Precision> p = find_precision(precision);
  if (!p) return std::nullopt;
  return precision_class(*p, find_math_mode(math_mode).value_or(MathMode::fma_only));
}

namespace {

// point_bounds' steps that fill more than a few fields, in its order (the notes
// keep it).

// Each level's time, intensity and attainable FLOP/s (L1 left out with the reason
// `l1_out`); returns the longest level time.
double add_memory_bounds(PointBounds& b,
                         const std::array<std::optional<double>, kLevelCount>& bytes,
                         const std::string& l1_out, const MachineRoofs& roofs) {
  double t_mem_max = 0;
  for (Level l : kAllLevels) {
    const std::size_t i = static_cast<std::size_t>(l);
    LevelBounds& lb = b.levels[i];
    lb.level = l;
    lb.bytes = bytes[i];
    const Roof& roof = roofs.bandwidth(l);
    if (roof.available()) lb.bandwidth = roof.value;
    if (l == Level::l1 && !l1_out.empty()) {
      lb.excluded = true;
      lb.excluded_reason = l1_out;
      b.notes.push_back(l1_out);
      continue;
    }
    if (lb.bytes && !lb.bandwidth && *lb.bytes > 0)
      b.notes.push_back(std::string("no ") + to_string(l) + " bandwidth roof: level left out (" +
                        roof.note + ")");
    if (lb.bytes && lb.bandwidth) {
      lb.time_s = *lb.bytes / *lb.bandwidth;
      t_mem_max = std::max(t_mem_max, *lb.time_s);
      if (roof.source == RoofSource::theoretical)
        b.notes.push_back(std::string(to_string(l)) + " bandwidth is theoretical");
    }
    if (lb.bytes && b.total_work > 0) {
      lb.intensity =
          *lb.bytes > 0 ? b.total_work / *lb.bytes : std::numeric_limits<double>::infinity();
      if (b.peak_effective && lb.bandwidth)
        lb.attainable = std::min(*b.peak_effective, *lb.intensity * *lb.bandwidth);
    }
  }
  return t_mem_max;
}

// T_xfer on the roofs of the point's own host memory (header).
void add_transfer_bounds(PointBounds& b, const Point& point, const MachineRoofs& roofs) {
  const Timing& t = point.timing;
  std::string unknown_host;
  b.transfer_host = transfer_host(point, &unknown_host);
  const std::string host = to_string(b.transfer_host);
  for (TransferDirection d : kAllTransferDirections) {
    TransferBounds& x = b.transfers[static_cast<std::size_t>(d)];
    x.direction = d;
    x.bytes = d == TransferDirection::h2d ? t.h2d_bytes : t.d2h_bytes;
    if (!x.bytes || !std::isfinite(*x.bytes) || *x.bytes <= 0) continue;
    if (!unknown_host.empty()) {
      b.notes.push_back("unknown transfer host '" + unknown_host + "': " + direction_name(d) +
                        " on the pinned roof (the fastest, so T_xfer stays a lower bound)");
    }
    const Roof& roof = roofs.transfer(d, b.transfer_host);
    const std::string what = host + " " + direction_name(d) + " roof";
    if (!roof.available()) {
      b.notes.push_back("no " + what + ": " + direction_name(d) + " left out of T_xfer (" +
                        roof.note + ")");
      continue;
    }
    x.bandwidth = roof.value;
    x.ceiling = roof.ceiling;
    x.time_s = *x.bytes / *roof.value;
    b.t_xfer += *x.time_s;
    b.notes.push_back("T_xfer on the " + what + " " + format_si(*roof.value, "B/s") + " (" +
                      roof.ceiling +
                      (roof.source == RoofSource::theoretical ? ", theoretical" : "") + ")");
  }
}

// The operator-level lower bound, or the per-kernel sum where every kernel has counters.
void add_lower_bound(PointBounds& b, const Point& point, const MachineRoofs& roofs,
                     const BoundsOptions& options) {
  b.t_lower_bound_operator = b.t_kernel_roof;
  b.t_lower_bound = b.t_kernel_roof;
  const bool per_kernel = options.per_kernel_lower_bound && !point.kernels.empty() &&
                          std::all_of(point.kernels.begin(), point.kernels.end(),
                                      [](const KernelRecord& k) { return has_counters(k); });
  if (per_kernel) {
    double sum = 0;
    for (const KernelRecord& k : point.kernels) {
      b.kernel_bounds.push_back(kernel_bound(k, roofs, options));
      sum += b.kernel_bounds.back().t_bound;
    }
    b.t_lower_bound_per_kernel = sum;
    // Both are lower bounds; a per-kernel sum below the operator's means the
    // kernel records do not add up to the totals.
    if (sum >= b.t_lower_bound_operator * (1 - 1e-9)) {
      b.t_lower_bound = sum;
      b.lower_bound_scope = BoundScope::per_kernel;
    } else {
      b.notes.push_back("per-kernel lower bound " + number(sum) +
                        " s is below the operator-level " + number(b.t_lower_bound_operator) +
                        " s (kernel counters do not add up to the totals): per-operator kept");
    }
  } else if (options.per_kernel_lower_bound && !point.kernels.empty() && b.t_kernel_roof > 0) {
    std::size_t with = 0;
    for (const KernelRecord& k : point.kernels) with += has_counters(k) ? 1 : 0;
    if (with > 0)
      b.notes.push_back(std::to_string(with) + " of " + std::to_string(point.kernels.size()) +
                        " kernels have counters: lower bound per operator");
  }
}

}  // namespace

PointBounds point_bounds(const Point& point, const MachineRoofs& roofs,
                         const BoundsOptions& options) {
  PointBounds b;
  const Timing& t = point.timing;

  // --- Work W_p ---------------------------------------------------------------
  if (read_work(point.counters, b.work)) b.work_source = Source::counters;
  if (b.work_source == Source::none && point.flops > 0) {
    if (const auto p = analytic_class(point.precision, point.math_mode)) {
      b.work[static_cast<std::size_t>(*p)] = point.flops;
      b.work_source = Source::analytic;
      b.notes.push_back(std::string("no FLOP counters: analytic work in ") + to_string(*p));
    } else {
      b.notes.push_back("no FLOP counters and no precision class for '" + point.precision +
                        "' / '" + point.math_mode + "': work unknown");
    }
  }
  for (double w : b.work) b.total_work += w;

  // --- Bytes Q_l --------------------------------------------------------------
  const auto read = counter(point, Quantity::dram_read_bytes);
  const auto write = counter(point, Quantity::dram_write_bytes);
  std::array<std::optional<double>, kLevelCount> bytes = read_bytes(point.counters);
  if (read && !write)
    b.notes.push_back("dram_write_bytes not collected: DRAM bytes are reads only");
  if (write && !read)
    b.notes.push_back("dram_read_bytes not collected: DRAM bytes are writes only");
  for (const auto& q : bytes)
    if (q) b.bytes_source = Source::counters;
  if (b.bytes_source == Source::none && point.min_bytes > 0) {
    bytes[static_cast<std::size_t>(Level::dram)] = point.min_bytes;
    b.bytes_source = Source::analytic;
    b.notes.push_back("no byte counters: DRAM bytes = analytic min_bytes");
  }
  const std::string l1_out = l1_exclusion(bytes, options.l1_min_fraction);

  // --- Timing -----------------------------------------------------------------
  b.call = measured(t.call);
  b.stream = measured(t.stream);
  b.graph = measured(t.graph);
  b.issue = measured(t.issue);
  b.graph_unavailable = t.graph_unavailable;
  if (b.stream) {
    b.time_s = b.stream->median_s;
    b.time_source = TimeSource::stream;
  } else if (b.call) {
    b.time_s = b.call->median_s;
    b.time_source = TimeSource::call;
  }
  b.kernel_s = positive(t.kernel_time_s);
  if (b.kernel_s) {
    if (const auto interval = kernel_interval(point, *b.kernel_s)) {
      b.kernel_low_s = interval->first;
      b.kernel_high_s = interval->second;
    }
  }
  if (!b.kernel_s && !point.kernels.empty()) {
    double sum = 0;
    for (const KernelRecord& k : point.kernels) sum += k.duration_s;
    b.kernel_s = positive(sum);
    if (b.kernel_s) b.notes.push_back("kernel time from the traced kernel records");
  }
  b.kernel_busy_s = kernel_busy(point);
  b.launches = t.launches;
  if (t.h2d_time_s || t.d2h_time_s)
    b.transfer_measured_s = t.h2d_time_s.value_or(0) + t.d2h_time_s.value_or(0);

  // --- Compute bound ----------------------------------------------------------
  for (PrecisionClass p : kAllPrecisionClasses) {
    const std::size_t i = static_cast<std::size_t>(p);
    if (b.work[i] <= 0) continue;
    const Roof& roof = roofs.peak(p);
    if (!roof.available()) {
      b.notes.push_back(std::string("no roof for ") + to_string(p) + ": its work is left out (" +
                        roof.note + ")");
      continue;
    }
    if (roof.source == RoofSource::theoretical)
      b.notes.push_back(std::string(to_string(p)) + " peak is theoretical");
    b.compute_s[i] = b.work[i] / *roof.value;
    (is_tensor(p) ? b.t_tensor : b.t_cuda) += b.compute_s[i];
  }
  b.t_compute = b.t_cuda + b.t_tensor;
  if (b.t_compute > 0) b.peak_effective = b.total_work / b.t_compute;

  // --- Memory bounds and the classic roofline per level -----------------------
  const double t_mem_max = add_memory_bounds(b, bytes, l1_out, roofs);

  // --- Roofs in time ----------------------------------------------------------
  b.t_kernel_roof = std::max(b.t_compute, t_mem_max);
  if (b.launches && roofs.launch.available())
    b.t_launch = static_cast<double>(*b.launches) * *roofs.launch.value;
  add_transfer_bounds(b, point, roofs);
  b.t_roof = std::max(b.t_kernel_roof, b.t_launch.value_or(0)) +
             (options.transfers_serial ? b.t_xfer : 0.0);

  // --- Classic summary --------------------------------------------------------
  if (b.total_work > 0 && b.peak_effective) {
    b.attainable = *b.peak_effective;
    b.limiting_roof = "compute";
    for (const LevelBounds& lb : b.levels) {
      if (lb.attainable && *lb.attainable < *b.attainable) {
        b.attainable = lb.attainable;
        b.limiting_roof = to_string(lb.level);
      }
    }
  }
  if (b.kernel_s && b.total_work > 0) {
    b.achieved = b.total_work / *b.kernel_s;
    if (b.kernel_low_s) {
      b.achieved_low = b.total_work / *b.kernel_high_s;
      b.achieved_high = b.total_work / *b.kernel_low_s;
    }
  }
  // T_kernel_roof / T_k, which is achieved / attainable whenever W > 0; defined
  // for byte-only points (copies) too.
  if (b.kernel_s && b.t_kernel_roof > 0) b.efficiency = b.t_kernel_roof / *b.kernel_s;
  if (b.total_work > 0) {
    double tensor = 0;
    for (PrecisionClass p : kAllPrecisionClasses)
      if (is_tensor(p)) tensor += b.work[static_cast<std::size_t>(p)];
    b.tensor_share = tensor / b.total_work;
  }
  if (b.kernel_s && b.total_work > 0) b.tensor_utilisation = b.t_tensor / *b.kernel_s;

  // --- Lower bound and headroom -----------------------------------------------
  add_lower_bound(b, point, roofs, options);
  if (b.t_lower_bound > 0) {
    if (b.time_s) b.headroom = *b.time_s / b.t_lower_bound;
    if (b.kernel_s) b.kernel_headroom = *b.kernel_s / b.t_lower_bound;
  }
  return b;
}

}  // namespace timeroof::roofline
