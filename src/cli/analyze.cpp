// `timeroof analyze`: the model's numbers for every point, the sweep fits and the
// ranked findings, as a terminal table, CSV (one row per point) or JSON (the whole
// structure, roofline/analysis.hpp). Reads the store or export files; no GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/format.hpp"
#include "plots/profile_report.hpp"
#include "roofline/analysis.hpp"
#include "roofline/profile_document.hpp"
#include "src/cli/command_options.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/console.hpp"
#include "src/cli/export_csv.hpp"
#include "src/cli/model_run.hpp"
#include "src/cli/profile_console.hpp"

namespace timeroof::cli {

namespace {

using roofline::PointAnalysis;
using roofline::PointBounds;
using roofline::RunAnalysis;

// The memory-level column: its time, "n/m" where L1 was left out (TMA).
std::string level_text(const PointBounds& b, Level l) {
  const roofline::LevelBounds& lb = b.level(l);
  if (lb.excluded) return "n/m";
  return format_number(lb.time_s, hint::time_part);
}

// The parameters whose values differ between the points of one sweep and are not
// implied by the op and precision columns (conv `direction`, LSTM `pass` and
// `math`): the ones worth showing (the rest are the sweep's baseline).
std::vector<std::string> varying_params(const RunRecord& record, const std::string& sweep) {
  std::map<std::string, std::set<std::string>> values;
  std::map<std::string, std::map<std::string, std::set<std::string>>> per_group;
  for (const Point& p : record.points) {
    if (p.sweep != sweep || !p.params.is_object()) continue;
    const std::string group = p.op + "\n" + p.precision;
    for (const auto& [k, v] : p.params.items()) {
      values[k].insert(v.dump());
      per_group[k][group].insert(v.dump());
    }
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : values) {
    if (v.size() < 2) continue;
    const auto& groups = per_group[k];
    const bool implied = std::all_of(groups.begin(), groups.end(),
                                     [](const auto& g) { return g.second.size() == 1; });
    if (!implied) out.push_back(k);
  }
  return out;
}

std::string roofs_text(const roofline::MachineRoofs& r) {
  std::string out;
  auto add = [&](const std::string& name, const roofline::Roof& roof, const char* unit) {
    if (!roof.available()) return;
    out += (out.empty() ? "" : ", ") + name + " " +
           (std::string(unit) == "s" ? roofline::format_time(*roof.value)
                                     : format_si(*roof.value, unit));
    if (roof.source == roofline::RoofSource::theoretical) out += " (theoretical)";
  };
  for (PrecisionClass p : kAllPrecisionClasses) add(to_string(p), r.peak(p), "FLOP/s");
  add("HBM", r.bandwidth(Level::dram), "B/s");
  add("L2", r.bandwidth(Level::l2), "B/s");
  add("L1", r.bandwidth(Level::l1), "B/s");
  add("launch", r.launch, "s");
  for (HostMemory h : kAllHostMemories)
    for (TransferDirection d : kAllTransferDirections)
      add(std::string(direction_name(d)) + " " + to_string(h), r.transfer(d, h), "B/s");
  return out;
}

std::string fit_text(const roofline::LinearFit& f, const std::string& y,
                     const std::string& parameter) {
  if (f.n < 2) return y + ": too few points for a fit";
  char r2[32] = "-";
  if (f.r2) std::snprintf(r2, sizeof r2, "%.3f", *f.r2);
  const std::string scatter = format_number(f.spread, hint::share);
  const std::string quality =
      " (robust fit of " + std::to_string(f.n) + " points, scatter " + scatter + ", R2 " + r2 + ")";
  if (f.flat)
    return y + " flat in " + parameter + " within +-" + roofline::format_time(f.flat_within) +
           " over " + roofline::format_value(f.x_min) + "-" + roofline::format_value(f.x_max) +
           quality;
  std::string out = y + " = " + roofline::format_time(f.a) + " fixed + " +
                    roofline::format_time_3(f.c) + " x " + parameter;
  if (f.c_low && f.c_high)
    out += " (slope 95% interval " + roofline::format_time_interval(*f.c_low, *f.c_high) + ")";
  out += quality;
  if (f.knee) {
    char knee[32];
    std::snprintf(knee, sizeof knee, *f.knee >= 10 ? "%.0f" : "%.2g", *f.knee);
    out += "; knee " + parameter + " ~ " + knee;
  }
  if (!f.knee_note.empty()) out += "; " + f.knee_note;
  return out;
}

std::string run_title(const RunRecord& record) {
  const Run& run = record.run;
  std::string out = "Run " + run.uuid.substr(0, 8) + ": " +
                    (run.machine.gpu.name.empty() ? "?" : run.machine.gpu.name);
  if (!run.machine.gpu.chip.empty()) out += " (" + run.machine.gpu.chip + ")";
  out += ", " + run.started_at + ", " + shown_status(run);
  return out;
}

// The series: the fits along `parameter` and where the class changes.
void series_text(std::ostream& out, const RunRecord& record, const RunAnalysis& a,
                 const std::string& parameter) {
  out << "\nseries along " << parameter << ": " << a.series.size() << "\n";
  for (const roofline::SeriesAnalysis& sa : a.series) {
    const roofline::Series& s = sa.series;
    const std::vector<std::string> keys = varying_params(record, s.sweep);
    std::vector<std::string> fixed_keys = keys;
    std::erase(fixed_keys, s.parameter);
    const std::string fixed = params_text(s.fixed, fixed_keys);
    out << "  " << terminal_safe(s.name()) << " [" << terminal_safe(s.sweep) << "]"
        << (fixed.empty() ? "" : " " + fixed) << ", " << s.parameter << " "
        << roofline::format_value(s.points.front().x) << "-"
        << roofline::format_value(s.points.back().x) << ", " << s.points.size() << " points\n";
    const std::string y = sa.fit.time_source == roofline::TimeSource::none
                              ? "T"
                              : roofline::to_string(sa.fit.time_source);
    out << "    " << fit_text(sa.fit.time, y, s.parameter) << "\n";
    if (sa.fit.graph) out << "    " << fit_text(*sa.fit.graph, "T_graph", s.parameter) << "\n";
    if (sa.fit.kernel) out << "    " << fit_text(*sa.fit.kernel, "T_k", s.parameter) << "\n";
    std::string classes;
    for (const roofline::ClassSegment& g : sa.fit.segments) {
      classes += (classes.empty() ? "" : ", then ") + g.label + " at " + s.parameter + " " +
                 roofline::format_value(g.x_first);
      if (g.x_last != g.x_first) classes += "-" + roofline::format_value(g.x_last);
    }
    out << "    classes: " << classes << "\n";
  }
}

// The findings, ranked by the time they explain.
void findings_text(std::ostream& out, const RunAnalysis& a) {
  out << "\nfindings, ranked by the time they explain (seconds summed over their points):\n";
  if (a.findings.empty()) out << "  none: no series of two or more measured points\n";
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    char rank[64];
    std::snprintf(rank, sizeof rank, "%3zu. [%8s] ", i + 1,
                  roofline::format_time(a.findings[i].explained_s).c_str());
    out << rank << a.findings[i].text << "\n";
  }
  if (!a.roof_findings.empty()) {
    out << "\nroofs flagged (machine-level):\n";
    for (const roofline::RoofFinding& f : a.roof_findings)
      out << "  [" << f.label << "] " << f.text << "\n";
  }
}

std::string analysis_table(const RunRecord& record, const RunAnalysis& a,
                           const roofline::FindingsOptions& options) {
  std::ostringstream out;
  std::size_t analysed = 0;
  for (const PointAnalysis& pa : a.points) analysed += pa.analysed ? 1 : 0;
  out << run_title(record) << ": " << record.points.size() << " points, " << analysed
      << " analysed\n";
  const std::string roofs = roofs_text(a.roofs);
  out << "roofs: " << (roofs.empty() ? "none measured" : roofs) << "\n";
  const roofline::Thresholds& th = options.series.thresholds;
  char rules[400];
  std::snprintf(rules, sizeof rules,
                "classes: transfer-bound >= %.0f%% of T; launch-bound where the host issues a "
                "call in more than %.3g x the device time (T_graph, else T_k + transfer; older "
                "runs: host overhead or N x L >= %.0f%% of T); near a roof >= %.0f%% of it; L1 "
                "used where L1 bytes >= %.2g x L2 bytes\n",
                100 * th.transfer_fraction, th.issue_ratio, 100 * th.launch_fraction,
                100 * th.roof_fraction, options.series.bounds.l1_min_fraction);
  out << rules;

  // Points, one table per sweep in the order of the run.
  bool any_excluded = false;
  for (const roofline::SweepAnalysis& sa : a.sweeps) {
    const std::string& sweep = sa.name;
    const std::vector<std::string> keys = varying_params(record, sweep);
    std::vector<std::vector<std::string>> rows = {
        {"seq",    "op",   "prec", "params", "status", "T",        "T_k",    "T_roof",
         "T_cuda", "T_tc", "T_L1", "T_L2",   "T_HBM",  "T_launch", "T_xfer", "limit",
         "class",  "eff",  "TC",   "T_lb",   "lb",     "headroom"}};
    std::vector<std::vector<std::string>> times = {{"seq", "T_call", "T_stream", "T_graph", "issue",
                                                    "T is", "host", "gaps", "xfer", "within",
                                                    "lost", "not expl", "premium", "class: why"}};
    std::vector<std::string> not_analysed, xfer_roofs, notes;
    for (const std::size_t index : sa.points) {
      const PointAnalysis& pa = a.points[index];
      const Point& p = record.points[index];
      std::vector<std::string> row = {std::to_string(p.seq), p.op, p.precision,
                                      params_text(p.params, keys), to_string(p.status)};
      if (!pa.analysed) {
        row.resize(rows.front().size(), "-");
        not_analysed.push_back("seq " + std::to_string(p.seq) + " " + to_string(p.status) + ": " +
                               (p.reason.empty() ? "no reason recorded" : p.reason));
      } else {
        const PointBounds& b = pa.bounds;
        any_excluded = any_excluded || b.level(Level::l1).excluded;
        const std::string xfer = roofline::transfer_roofs_text(b);
        if (!xfer.empty() &&
            std::find(xfer_roofs.begin(), xfer_roofs.end(), xfer) == xfer_roofs.end())
          xfer_roofs.push_back(xfer);
        const roofline::Decomposition& d = pa.classification.parts;
        times.push_back(
            {std::to_string(p.seq), roofline::format_time_stats(b.call),
             roofline::format_time_stats(b.stream), roofline::format_time_stats(b.graph),
             roofline::format_time_stats(b.issue), roofline::to_string(d.time_source),
             format_number(d.host_overhead_s, hint::time_part) + (d.separated ? "" : "*"),
             d.separated ? format_number(d.device_gaps_s, hint::time_part) : "-",
             format_number(d.transfer_s, hint::time_part),
             format_number(d.within_roof_s, hint::time_part),
             format_number(d.lost_to_roof_s, hint::time_part),
             format_number(d.not_explained_s, hint::time_part),
             format_number(d.call_premium_s, hint::time_part),
             pa.classification.label() + ": " + pa.classification.reason});
        for (const std::string& note : d.notes)
          if (note.find("not measured separately") == std::string::npos)
            notes.push_back("seq " + std::to_string(p.seq) + ": " + note);
        const std::vector<std::string> numbers = {
            format_number(b.time_s, hint::time_part),
            format_number(b.kernel_s, hint::time_part),
            format_number(b.t_roof, hint::time_part),
            format_number(b.t_cuda, hint::time_part),
            format_number(b.t_tensor, hint::time_part),
            level_text(b, Level::l1),
            level_text(b, Level::l2),
            level_text(b, Level::dram),
            format_number(b.t_launch, hint::time_part),
            format_number(b.t_xfer, hint::time_part),
            b.limiting_roof.empty() ? "-" : b.limiting_roof,
            pa.classification.label(),
            format_number(b.efficiency, hint::share),
            format_number(b.tensor_share, hint::share),
            format_number(b.t_lower_bound, hint::time_part),
            b.lower_bound_scope == roofline::BoundScope::per_kernel ? "kernel" : "op",
            format_number(b.headroom, hint::ratio)};
        row.insert(row.end(), numbers.begin(), numbers.end());
      }
      rows.push_back(std::move(row));
    }
    const std::string shown = sweep.empty() ? "(unnamed)" : terminal_safe(sweep);
    out << "\nsweep " << shown << ": " << rows.size() - 1 << " points\n";
    std::vector<bool> right(rows.front().size(), true);
    for (std::size_t c : {1, 2, 3, 4, 15, 16, 20}) right[c] = false;
    out << text_table(rows, right);
    for (const std::string& line : xfer_roofs) out << "  T_xfer on the " << line << "\n";
    for (const std::string& line : not_analysed) out << "  " << line << "\n";
    out << "\ntimes of sweep " << shown << ": median +- half its 95% interval, and where T goes\n";
    std::vector<bool> right_times(times.front().size(), true);
    right_times.back() = false;
    right_times[5] = false;
    out << text_table(times, right_times);
    for (const std::string& line : notes) out << "  " << line << "\n";
  }
  out << "\nT = T_stream where measured, else T_call; T roof = max(T_compute = T_cuda + T_tc, "
         "T_mem per level, T_launch) + T_xfer (on the pinned or pageable H2D/D2H roofs, as the "
         "point's host memory); eff = T_kernel_roof / T_k; TC = Tensor-Core share of the FLOPs; "
         "T_lb = Benanza lower bound (lb kernel: summed per kernel; op: of the operator's "
         "totals); headroom = T / T_lb.\n"
         "Times: host = T - T_graph (* where T_graph was not measured: host overhead and device "
         "gaps together); gaps = T_graph - T_k - transfer; within / lost = kernel time within "
         "and beyond the kernels' roof; not expl = T - the parts (negative where measured parts "
         "exceed T: the notes say why); premium = T_call - T_stream, one isolated call's extra "
         "latency (negative beyond both intervals: the passes ran at different speeds, flagged "
         "in the notes).\n";
  if (any_excluded)
    out << "n/m: L1 not measured meaningfully (TMA): its bytes are below the L2 bytes' fraction "
           "above, so L1 takes no part in the roof.\n";

  series_text(out, record, a, options.series.parameter);
  findings_text(out, a);
  if (a.model) out << "\n" << format_model(*a.model);
  return out.str();
}

roofline::ProfileAnalysis analyze_profile_run(const RunRecord& record) {
  return roofline::analyze_profile(record.trace, roofline::profile_options(record));
}

// "3, 5" (store ids; a run read from a file by its uuid's first 8 characters).
std::string run_ids(const std::vector<RunRecord>& records) {
  std::string out;
  for (const RunRecord& r : records)
    out += (out.empty() ? "" : ", ") +
           (r.run.id != 0 ? std::to_string(r.run.id) : r.run.uuid.substr(0, 8));
  return out;
}

}  // namespace

ExitCode run_analyze(const CommonOptions& options, const std::vector<std::string>& runs,
                     const std::vector<std::string>& from, const std::string& requested_format) {
  const std::string format = table_json_or_csv(options.json, requested_format);
  // The store or the --from files are this command's inputs: --out must be neither.
  const std::vector<std::string> inputs =
      from.empty() ? std::vector<std::string>{options.db} : from;
  refuse_overwriting(options.out, inputs);
  std::vector<RunRecord> records = load_runs(options, runs, from);
  attach_profile_roofs(records, options, from);
  const roofline::FindingsOptions model;
  // Profile runs are analysed from their trace; the sweep analysis (empty for
  // them) is formed for the other runs only.
  std::string text;
  if (format == "table") {
    for (std::size_t i = 0; i < records.size(); ++i) {
      const RunRecord& r = records[i];
      text +=
          (i ? "\n" : "") +
          (r.trace.empty() ? analysis_table(r, roofline::analyze(r, model), model)
                           : profile_text(analyze_profile_run(r), plots::profile_provenance(r)));
    }
    // Names, reasons and findings quote the stored data; JSON and CSV keep it as is.
    text = terminal_safe(text, LineBreaks::keep);
  } else {
    std::vector<RunRecord> profile_runs, other_runs;  // each in the order named
    for (RunRecord& r : records)
      (r.trace.empty() ? other_runs : profile_runs).push_back(std::move(r));
    std::vector<roofline::ProfileAnalysis> profiles;
    for (const RunRecord& r : profile_runs) profiles.push_back(analyze_profile_run(r));
    if (format == "json") {
      // Profile runs alone: their document; beside other runs, under "profiles".
      nlohmann::json document = other_runs.empty()
                                    ? roofline::profile_document(profile_runs, profiles)
                                    : roofline::analysis_document(other_runs, model);
      if (!other_runs.empty() && !profile_runs.empty())
        document["profiles"] = roofline::profile_document(profile_runs, profiles);
      text = document.dump(2) + "\n";
    } else if (!profile_runs.empty() && !other_runs.empty()) {
      throw usage_error("--format csv prints one table, and runs " + run_ids(profile_runs) +
                        " are profiles while runs " + run_ids(other_runs) +
                        " are not: name the runs of one kind");
    } else if (!profile_runs.empty()) {
      text = csv_text(profile_table(profile_runs, profiles));
    } else {
      std::vector<RunAnalysis> analyses;
      for (const RunRecord& r : other_runs) analyses.push_back(roofline::analyze(r, model));
      text = csv_text(points_table(other_runs, analyses));
    }
  }
  write_output(options.out, text, inputs);
  return ExitCode::ok;
}

void register_analyze(CLI::App& app, CommonOptions& options, Action& action) {
  struct Arguments {
    std::vector<std::string> runs;
    std::vector<std::string> from;
    std::string format;
  };
  auto args = std::make_shared<Arguments>();
  CLI::App* command = app.add_subcommand(
      "analyze",
      "Print the model's analysis of runs (all, or those named by id or uuid prefix) from "
      "the results store or from export files: per point the time bounds, limiting roof, "
      "bottleneck class, efficiency and lower bound; per series the fit; the ranked "
      "findings. No GPU needed");
  add_db(*command, options);
  add_json(*command, options);
  add_run_selection(*command, args->runs, args->from);
  command->add_option("--format", args->format, "table (default), json (everything) or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}));
  command->add_option("--out", options.out, "write to this file instead of stdout");
  command->footer(
      "Examples:\n  timeroof analyze\n  timeroof analyze 3 --format csv --out run3.csv\n"
      "  timeroof analyze --from samples/sample-run.json.gz --format json | jq "
      "'.runs[0].findings'\n\n"
      "Table: one table of points per sweep (times per call; n/m = L1 not measured\n"
      "meaningfully, TMA), then per series the robust fit T = a + c x batch and its knee,\n"
      "then the findings ranked by the share of their series' time they explain.\n"
      "CSV: one row per point, every parameter a column: the points table of `timeroof\n"
      "export --format csv` (README, \"Data out\"). JSON: the whole structure.\n"
      "Profile runs (`timeroof profile`): their trace's tables, with each kernel's and\n"
      "range's roofline where counters were measured, on the newest ceilings run of\n"
      "their GPU; JSON the profile document (docs/schemas/profile-analysis.schema.json;\n"
      "beside other runs under \"profiles\"), CSV one row per kernel or range and quantity.");
  when_chosen(*command, action, [&options, args] {
    return run_analyze(options, args->runs, args->from, args->format);
  });
}

}  // namespace timeroof::cli
