// `timeroof compare BASE OTHER`: two sides' roofs and points side by side
// (roofline/compare.hpp), as a table, JSON or CSV, or as an HTML or Markdown
// report with charts (plots/compare_report.hpp); exit code 4 when something is
// worse beyond its noise, so a CI job can gate on it.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "core/format.hpp"
#include "plots/compare_report.hpp"
#include "roofline/compare.hpp"
#include "src/cli/command_options.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/console.hpp"

namespace timeroof::cli {

namespace {

bool is_file(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// One side: an export file, or run ids / uuid prefixes of the store separated by
// commas ("3" or "3,4": a ceilings run and its sweeps).
std::vector<RunRecord> load_side(const CommonOptions& options, const std::string& side) {
  // Run ids and uuid prefixes hold neither '/' nor '.': such a side is a file,
  // and read_export_file says why it cannot be read (missing, a directory, ...).
  if (is_file(side) || side.find_first_of("/.") != std::string::npos) return read_export_file(side);
  std::vector<std::string> runs;
  std::size_t start = 0;
  while (start <= side.size()) {
    const std::size_t comma = std::min(side.find(',', start), side.size());
    const std::string id = side.substr(start, comma - start);
    if (id.empty())
      throw usage_error("compare: '" + side +
                        "' is neither an export file nor run ids separated by commas");
    runs.push_back(id);
    start = comma + 1;
  }
  return load_runs(options, runs, {});
}

// "5%" or "0.05" -> 0.05; a usage error otherwise.
double parse_threshold(const std::string& text) {
  std::string number = text;
  const bool percent = !number.empty() && number.back() == '%';
  if (percent) number.pop_back();
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(value) || value < 0)
    throw usage_error("--threshold " + text + ": give a share such as 5% or 0.05");
  const double share = percent ? value / 100 : value;
  if (share >= 1)
    throw usage_error("--threshold " + text + ": a threshold of 100% or more never fires; " +
                      "give a share such as 5% or 0.05");
  return share;
}

std::string comparison_table(const roofline::Comparison& c) {
  using roofline::Verdict;
  std::string out = "compare: base " + c.base_label + ", other " + c.other_label + " (threshold " +
                    format_number(c.options.threshold, hint::percent_1) +
                    ", beyond the 95% intervals)\n";
  if (!c.provenance.empty()) {
    std::vector<std::vector<std::string>> rows = {{"changed", "base", "other"}};
    for (const auto& p : c.provenance) rows.push_back({p.field, p.base, p.other});
    out += "\n" + text_table(rows, {}, true);
  }
  if (!c.roofs.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"roof", "base", "other", "other/base [95%]", "verdict"}};
    for (const auto& r : c.roofs)
      rows.push_back({r.name, format_si(r.base, r.unit), format_si(r.other, r.unit),
                      roofline::format_ratio(r.ratio), to_string(r.verdict)});
    out += "\n" + text_table(rows, {false, true, true, true, false}, true);
  }
  int counts[3] = {0, 0, 0};
  for (const auto& p : c.points) ++counts[static_cast<int>(p.verdict)];
  out += "\npoints: " + std::to_string(c.points.size()) +
         " matched: " + std::to_string(counts[static_cast<int>(Verdict::worse)]) + " worse, " +
         std::to_string(counts[static_cast<int>(Verdict::same)]) + " same, " +
         std::to_string(counts[static_cast<int>(Verdict::better)]) + " better";
  if (!c.points_only_in_base.empty())
    out += "; " + std::to_string(c.points_only_in_base.size()) + " only in base";
  if (!c.points_only_in_other.empty())
    out += "; " + std::to_string(c.points_only_in_other.size()) + " only in other";
  if (!c.points_not_timed.empty())
    out += "; " + std::to_string(c.points_not_timed.size()) + " not timed on a side";
  if (!c.duplicates.empty())
    out += "; " + std::to_string(c.duplicates.size()) + " measured more than once on a side";
  out += "\n";
  // The worse points, the largest ratio first: what a regression review reads.
  std::vector<const roofline::PointComparison*> worse;
  for (const auto& p : c.points)
    if (p.verdict == Verdict::worse) worse.push_back(&p);
  std::stable_sort(worse.begin(), worse.end(),
                   [](auto* a, auto* b) { return a->ratio.value > b->ratio.value; });
  if (!worse.empty()) {
    // Per sweep, only the parameters that vary among its matched points.
    std::map<std::string, std::vector<const roofline::PointComparison*>> by_sweep;
    for (const auto& p : c.points) by_sweep[p.sweep].push_back(&p);
    std::map<std::string, std::vector<std::string>> varying;
    for (const auto& [sweep, points] : by_sweep) varying[sweep] = roofline::varying_params(points);
    std::vector<std::vector<std::string>> rows = {
        {"worse point", "params", "T base", "T other", "other/base [95%]", "class base -> other"}};
    for (const auto* p : worse)
      rows.push_back({p->sweep + " #" + std::to_string(p->base_seq) + " " + p->op,
                      params_text(p->params, varying[p->sweep]),
                      format_number(p->base_time_s, hint::time),
                      format_number(p->other_time_s, hint::time), roofline::format_ratio(p->ratio),
                      p->base_class + " -> " + p->other_class});
    out += "\n" + text_table(rows, {false, false, true, true, true, false}, true);
  }
  for (const roofline::ModelComparison& m : c.models) {
    std::vector<std::vector<std::string>> rows = {{"model " + m.name, "T_model base",
                                                   "T_model other", "other/base", "T_lb base",
                                                   "T_lb other", "layers without a time"}};
    for (const auto& b : m.batches)
      rows.push_back({"batch " + std::to_string(b.batch), format_number(b.base_time_s, hint::time),
                      format_number(b.other_time_s, hint::time),
                      format_number(b.ratio, hint::significant_3) + "x",
                      format_number(b.base_bound_s, hint::time),
                      format_number(b.other_bound_s, hint::time), std::to_string(b.missing)});
    out += "\n" + text_table(rows, {false, true, true, true, true, true, true}, true);
    std::vector<std::vector<std::string>> layers = {{"layer", "batch", "count", "T base", "T other",
                                                     "other/base [95%]", "verdict",
                                                     "class base -> other"}};
    for (const auto& l : m.layers)
      layers.push_back({l.layer, std::to_string(l.batch), std::to_string(l.count),
                        format_number(l.base_time_s, hint::time),
                        format_number(l.other_time_s, hint::time), roofline::format_ratio(l.ratio),
                        to_string(l.verdict), l.base_class + " -> " + l.other_class});
    out += text_table(layers, {false, true, true, true, true, true, false, false}, true);
    if (!m.only_in_base.empty() || !m.only_in_other.empty())
      out += "  layers only in base: " + std::to_string(m.only_in_base.size()) +
             ", only in other: " + std::to_string(m.only_in_other.size()) + "\n";
  }
  if (!c.findings.empty()) {
    out += "\nfindings:\n";
    for (std::size_t i = 0; i < c.findings.size(); ++i)
      out += "  " + std::to_string(i + 1) + ". " + c.findings[i] + "\n";
  }
  for (const auto& [title, names] : {std::pair{"roofs only in base", &c.roofs_only_in_base},
                                     std::pair{"roofs only in other", &c.roofs_only_in_other},
                                     std::pair{"points only in base", &c.points_only_in_base},
                                     std::pair{"points only in other", &c.points_only_in_other}}) {
    if (names->empty()) continue;
    out += std::string("\n") + title + ":\n";
    for (const std::string& n : *names) out += "  " + n + "\n";
  }
  if (!c.duplicates.empty()) {
    out += "\nmeasured more than once (the newest timed measurement compared):\n";
    for (const roofline::DuplicatePoint& d : c.duplicates)
      out += "  " + d.side + " " + d.point + ": " + std::to_string(d.measured_in.size()) +
             " measurements, compared " + d.kept + "\n";
  }
  return terminal_safe(out, LineBreaks::keep);
}

// One row per roof and per matched point, ratios with their intervals.
std::string comparison_csv(const roofline::Comparison& c) {
  std::string out =
      "kind,name,sweep,seq_base,seq_other,params,unit,base,other,ratio,ratio_low,ratio_high,"
      "verdict,class_base,class_other\n";
  auto number = [](double x) { return format_number(x, hint::exact); };
  for (const auto& r : c.roofs)
    out += "roof," + csv_field(r.name) + ",,,,," + csv_field(r.unit) + "," + number(r.base) + "," +
           number(r.other) + "," + number(r.ratio.value) + "," + number(r.ratio.low) + "," +
           number(r.ratio.high) + "," + to_string(r.verdict) + ",,\n";
  for (const auto& p : c.points)
    out += "point," + csv_field(p.op) + "," + csv_field(p.sweep) + "," +
           std::to_string(p.base_seq) + "," + std::to_string(p.other_seq) + "," +
           csv_field(p.params.dump()) + ",s," + number(p.base_time_s) + "," +
           number(p.other_time_s) + "," + number(p.ratio.value) + "," + number(p.ratio.low) + "," +
           number(p.ratio.high) + "," + to_string(p.verdict) + "," + csv_field(p.base_class) + "," +
           csv_field(p.other_class) + "\n";
  return out;
}

// The directory a report is written into without --out.
constexpr const char* kDefaultCompareReportDir = "timeroof-compare";

// html and markdown write a report directory; the other formats are resolved as
// analyze's are (table, json, csv; --json for json).
std::string compare_format(bool json, const std::string& requested) {
  if (requested != "html" && requested != "markdown") return table_json_or_csv(json, requested);
  if (json) throw usage_error("--json and --format " + requested + " disagree; give one of them");
  return requested;
}

}  // namespace

ExitCode run_compare(const CommonOptions& options, const std::string& base,
                     const std::string& other, const std::string& threshold,
                     const std::string& requested_format) {
  const std::string format = compare_format(options.json, requested_format);
  roofline::CompareOptions compare_options;
  if (!threshold.empty()) compare_options.threshold = parse_threshold(threshold);
  std::vector<std::string> inputs = {options.db};
  for (const std::string& side : {base, other})
    if (is_file(side)) inputs.push_back(side);
  refuse_overwriting(options.out, inputs);
  // Each side analysed once: the comparison and the report's charts read it.
  const roofline::ComparedSide base_side = roofline::analyse_side(load_side(options, base));
  const roofline::ComparedSide other_side = roofline::analyse_side(load_side(options, other));
  const roofline::Comparison c = roofline::compare_runs(base_side, other_side, compare_options);
  if (format == "html" || format == "markdown") {
    const std::string dir = options.out.empty() ? kDefaultCompareReportDir : options.out;
    std::cout << plots::write_compare_report(c, base_side, other_side, dir,
                                             format == "html"
                                                 ? plots::CompareReportFormat::html
                                                 : plots::CompareReportFormat::markdown)
              << '\n';
  } else {
    std::string text;
    if (format == "json")
      text = roofline::comparison_json(c).dump(2) + "\n";
    else if (format == "csv")
      text = comparison_csv(c);
    else
      text = comparison_table(c);
    write_output(options.out, text, inputs);
  }
  return c.worse_count() > 0 ? ExitCode::regression : ExitCode::ok;
}

void register_compare(CLI::App& app, CommonOptions& options, Action& action) {
  struct Arguments {
    std::string base, other, threshold, format;
  };
  auto args = std::make_shared<Arguments>();
  CLI::App* command = app.add_subcommand(
      "compare",
      "Compare two runs, or two sets of runs (before and after an upgrade, one GPU against "
      "another): roofs by name and points by operator and parameters, each with the ratio "
      "other/base and its 95% interval, a verdict beyond the noise, what changed in the "
      "provenance, and findings on where one side wins. Exit code 4 when anything is worse "
      "than the threshold beyond its noise. No GPU needed");
  add_db(*command, options);
  add_json(*command, options);
  command->add_option("base", args->base, "an export file, or run ids of the store: 3 or 3,4")
      ->required();
  command->add_option("other", args->other, "the same for the other side")->required();
  command->add_option("--threshold", args->threshold,
                      "changes smaller than this are the same (default 5%; 0.05 also works)");
  command
      ->add_option("--format", args->format,
                   "table (default), json or csv; html or markdown: a report with charts")
      ->check(CLI::IsMember({"table", "json", "csv", "html", "markdown"}));
  command->add_option("--out", options.out,
                      "write to this file instead of stdout; html and markdown: the report "
                      "directory (default ./timeroof-compare)");
  command->footer(
      "Examples:\n  timeroof compare samples/sample-run-h100.json.gz samples/sample-run.json.gz\n"
      "  timeroof compare 3,4 7,8 --threshold 3% || echo regression\n"
      "  timeroof compare before.json after.json --format json | jq '.findings'\n"
      "  timeroof compare samples/sample-run-h100.json.gz samples/sample-run.json.gz \\\n"
      "      --format html --out h100-vs-h200\n\n"
      "html writes DIR/index.html, self-contained (inline SVG and CSS); markdown writes\n"
      "DIR/report.md and its SVG charts. Either prints the path of the file written.\n"
      "Points measured in several runs of one side (BASE = 3,4) are compared once, with\n"
      "the newest timed measurement; the table and report name the others.\n\n"
      "Verdicts: worse when the whole 95% interval of other/base lies past the threshold\n"
      "on the bad side (slower times, lower rates), better alike; same otherwise.");
  when_chosen(*command, action, [&options, args] {
    return run_compare(options, args->base, args->other, args->threshold, args->format);
  });
}

}  // namespace timeroof::cli
