#include "kernels/time_windows.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "core/format.hpp"
#include "core/json_io.hpp"
#include "kernels/ceiling_support.hpp"
#include "kernels/measure.hpp"

namespace timeroof {

using ceiling_support::concat;

TimeWindow sample_window(const std::function<double()>& sample_seconds, double units,
                         const StopRule& rule) {
  TimeWindow window;
  const bool converged =
      sample_until_converged(rule, window.samples, [&](int n, std::vector<double>& out) {
        for (int i = 0; i < n; ++i) out.push_back(sample_seconds() / units);
      });
  window.stats = time_stats(window.samples, static_cast<int>(units), converged);
  return window;
}

namespace {

// Windows in processes of their own: the host gives each process one of its
// modes, ~20-30% apart (H200 launch_async ~3.5 or ~4.4 us), and processes in the
// fast mode still differ by ~6% (3.4-3.6 us). The roof is the median window of
// the fast mode, the windows within kFastModeBand of the fastest: the fastest
// alone is the luckiest process, and moved 6.8% between three runs.
constexpr double kFastModeBand = 1.10;

struct FastMode {
  TimeStats median;  // the median window's stats (the lower of the two middle ones)
  std::size_t windows = 0;
};

FastMode fast_mode(std::vector<TimeStats> stats) {
  std::sort(stats.begin(), stats.end(),
            [](const TimeStats& a, const TimeStats& b) { return a.median_s < b.median_s; });
  const double limit = stats.front().median_s * kFastModeBand;
  const auto fast = static_cast<std::size_t>(std::count_if(
      stats.begin(), stats.end(), [limit](const TimeStats& s) { return s.median_s <= limit; }));
  return {stats[(fast - 1) / 2], fast};
}

}  // namespace

Ceiling windowed_ceiling(const WindowedRoof& roof, std::string_view note) {
  std::vector<TimeStats> stats;
  std::vector<double> all;
  std::string medians, unconverged;
  for (std::size_t i = 0; i < roof.windows.size(); ++i) {
    const TimeWindow& w = roof.windows[i];
    stats.push_back(w.stats);
    all.insert(all.end(), w.samples.begin(), w.samples.end());
    medians +=
        concat(i ? ", " : "", format_number(w.stats.median_s, hint::time_3), " at ",
               std::round(w.at_s * 10) / 10, " s", w.detail.empty() ? "" : " (" + w.detail + ")");
    if (!w.stats.converged) unconverged += concat(unconverged.empty() ? "" : ", ", i + 1);
  }
  const TimeStats combined = combine_windows(stats);
  std::sort(all.begin(), all.end());
  const std::size_t n = roof.windows.size();
  const bool in_processes = roof.windows_in_processes && n > 1;
  const FastMode fast = in_processes ? fast_mode(stats) : FastMode{combined, n};
  const TimeStats& chosen = fast.median;

  const Measurement m{.median_s = chosen.median_s,
                      .min_s = combined.min_s,
                      .max_s = combined.max_s,
                      .repeats = combined.samples,
                      .spread = combined.spread};
  std::string failures;
  for (const std::string& failure : roof.failures) failures += "; " + failure;
  const std::string interval =
      chosen.ci_low_s && chosen.ci_high_s
          ? concat(", 95% interval of the median ", format_si(*chosen.ci_low_s, "s"), " - ",
                   format_si(*chosen.ci_high_s, "s"),
                   in_processes ? " (that window's)"
                   : n > 1      ? " (from the lowest window's low to the highest window's high)"
                                : "")
          : std::string();
  // One window reads as one sampled time always did; several name each window.
  const std::string windows_text =
      n == 1
          ? std::string()
          : concat(
                "; measured in ", n,
                in_processes ? " windows, each in a process of its own (the host's cost differs "
                               "between processes), "
                             : " windows, ",
                "each one's median and when it began (seconds into the ceilings run): ", medians);
  const std::string roof_text =
      in_processes
          ? concat("; the roof: the median window of the host's fast mode (the ", fast.windows,
                   " of ", n, " windows within ", std::lround((kFastModeBand - 1) * 100),
                   "% of the fastest), ", format_number(chosen.median_s, hint::time_3))
          : std::string();
  return make_ceiling(
      roof.name, roof.kind, roof.unit, roof.amount_per_unit, m,
      concat(roof.scheme, windows_text, "; ", combined.samples, " samples, p10 / p50 / p90 ",
             format_si(quantile_of_sorted(all, 0.1), "s"), " / ", format_si(combined.median_s, "s"),
             " / ", format_si(quantile_of_sorted(all, 0.9), "s"),
             n > 1 ? " (p50: the median of the window medians)" : "", roof_text, interval,
             unconverged.empty() ? ""
                                 : concat(" (the budget ended sampling before +-3%",
                                          n > 1 ? " in window " + unconverged : "", ")"),
             failures, note.empty() ? "" : "; ", note));
}

std::vector<int> windows_after_each(std::span<const std::string> families,
                                    std::string_view windowed_family, int windows) {
  std::vector<int> after(families.size(), 0);
  const auto own = std::find(families.begin(), families.end(), windowed_family);
  if (own == families.end() || windows < 1) return after;
  const auto first = static_cast<std::size_t>(own - families.begin());
  const std::size_t later = families.size() - 1 - first;  // families after its own turn
  ++after[first];
  // Window k (1 .. windows - 1) after the family k / (windows - 1) of the way
  // through the later ones: the last after the last family.
  for (int k = 1; k < windows; ++k)
    ++after[first + static_cast<std::size_t>(k) * later / static_cast<std::size_t>(windows - 1)];
  return after;
}

std::string window_spacing_note(std::span<const int> windows_after, bool quick) {
  const auto turns = std::count_if(windows_after.begin(), windows_after.end(),
                                   [](int windows) { return windows > 0; });
  if (turns <= 1)
    return "the windows one after another: no other ceiling family ran to spread them over, so "
           "the interval holds seconds of host drift, not a whole run's";
  return quick ? "the windows spread over the ceilings run, between the other families (quick "
                 "mode: a run of seconds, so they lie close together)"
               : "the windows spread over the ceilings run, between the other families";
}

nlohmann::json window_json(const TimeWindow& window) {
  return {{"at_s", window.at_s},
          {"samples", window.samples},
          {"stats", window.stats},
          {"detail", window.detail}};
}

TimeWindow window_from_json(const nlohmann::json& json) {
  TimeWindow window;
  window.at_s = json.value("at_s", 0.0);
  window.samples = json.at("samples").get<std::vector<double>>();
  window.stats = json.at("stats").get<TimeStats>();
  window.detail = json.value("detail", std::string());
  return window;
}

}  // namespace timeroof
