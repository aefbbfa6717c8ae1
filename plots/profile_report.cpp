#include "plots/profile_report.hpp"

#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "core/format.hpp"
#include "plots/charts.hpp"
#include "plots/report.hpp"
#include "plots/report_document.hpp"

namespace timeroof::plots {

namespace {

using roofline::ProfileAnalysis;
using roofline::RangeNode;

std::string time_text(std::uint64_t ns) {
  return format_number(static_cast<double>(ns) * 1e-9, hint::time_part);
}

std::string share_text(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return format_number(std::nullopt, hint::share);
  return format_number(static_cast<double>(part) / static_cast<double>(whole), hint::share);
}

std::string count_text(std::uint64_t n) {
  return std::to_string(n);
}

// Kernel names of C++ templates run to thousands of characters (PyTorch's
// elementwise kernels with their lambdas); a table shows the start, which names
// the kernel, and the end, which tells overloads apart. The trace, the export and
// the Perfetto file keep the whole name.
constexpr std::size_t kKernelNameChars = 96;
std::string table_name(const std::string& name) {
  if (name.size() <= kKernelNameChars) return name;
  constexpr std::size_t kTail = 24;
  std::size_t head = kKernelNameChars - kTail - 3;
  while (head > 0 && (static_cast<unsigned char>(name[head]) & 0xC0) == 0x80) --head;  // UTF-8
  std::size_t tail = name.size() - kTail;
  while (tail < name.size() && (static_cast<unsigned char>(name[tail]) & 0xC0) == 0x80) ++tail;
  return name.substr(0, head) + "..." + name.substr(tail);
}

// The model's columns, where the trace has counters (otherwise the tables read
// as before): what the numbers cover, then the class and the bounds.
bool with_model(const ProfileAnalysis& a) {
  return a.counter_records > 0;
}

const std::vector<std::string> kModelHeader = {"Measured", "Covered",     "Class",   "Efficiency",
                                               "TC share", "Lower bound", "Headroom"};
const std::vector<bool> kModelNumeric = {true, true, false, true, true, true, true};

std::vector<std::string> model_cells(const std::optional<roofline::KernelModel>& m) {
  const std::string none = format_number(std::nullopt, hint::share);
  if (!m) return {"0", none, none, none, none, none, none};
  std::string covered =
      std::to_string(m->launches) + " of " + std::to_string(m->launches + m->not_covered);
  if (m->timed_by_replay > 0)
    covered += " (" + std::to_string(m->timed_by_replay) + " replay-timed)";
  const bool judged = m->bounds.t_kernel_roof > 0;
  return {std::to_string(m->measured),
          covered,
          judged ? m->classification.label() : none,
          format_number(m->bounds.efficiency, hint::share),
          format_number(m->bounds.tensor_share, hint::share),
          judged ? format_number(m->bounds.t_lower_bound, hint::time_part) : none,
          format_number(m->headroom, hint::ratio)};
}

constexpr const char* kModelCaption =
    " Measured: launches with counters of their own; covered: launches the model counts, "
    "their configuration's (name, grid, block) counters applied per call (extrapolated), "
    "timed by the configuration's unmeasured launches (replay-timed: only measured ones, their "
    "replayed time); class and efficiency as for a sweep point (T_kernel_roof / T_k); lower "
    "bound = the Benanza bound, summed per kernel configuration; headroom = time / lower bound "
    "(a kernel: T_k; a range: its wall time).";

void add_model_columns(ProfileTable& t) {
  t.header.insert(t.header.end(), kModelHeader.begin(), kModelHeader.end());
  t.numeric.insert(t.numeric.end(), kModelNumeric.begin(), kModelNumeric.end());
  t.caption += kModelCaption;
}

ProfileTable kernels_table(const ProfileAnalysis& a, std::size_t top) {
  ProfileTable t{"kernels",
                 "Top kernels by total time",
                 "GPU time per kernel name (names over 96 characters shortened in the middle); "
                 "the share is of the GPU's busy time (the union of "
                 "all GPU work, so overlapping streams are not counted twice).",
                 {"Kernel", "Calls", "Total", "Share of GPU busy", "Median", "Min", "Max"},
                 {},
                 {false, true, true, true, true, true, true}};
  for (std::size_t i = 0; i < a.kernels.size() && i < top; ++i) {
    const roofline::KernelSummary& k = a.kernels[i];
    t.rows.push_back({table_name(k.name), count_text(k.calls), time_text(k.total_ns),
                      format_number(k.share_of_busy, hint::share), time_text(k.median_ns),
                      time_text(k.min_ns), time_text(k.max_ns)});
    if (with_model(a)) {
      const std::vector<std::string> cells = model_cells(k.model);
      t.rows.back().insert(t.rows.back().end(), cells.begin(), cells.end());
    }
  }
  if (with_model(a)) add_model_columns(t);
  // The user's own metrics (profile --metrics), a column each, raw as CUPTI gives them.
  std::set<std::string> metrics;
  for (std::size_t i = 0; i < a.kernels.size() && i < top; ++i)
    for (const auto& [metric, value] : a.kernels[i].metrics) metrics.insert(metric);
  for (const std::string& metric : metrics) {
    t.header.push_back(metric);
    t.numeric.push_back(true);
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
      const auto& values = a.kernels[i].metrics;
      const auto v = values.find(metric);
      // "52.0 k" (counts, cycles, bytes), "87.5" (percents, ratios), "-" where unmeasured
      t.rows[i].push_back(v == values.end() ? format_si(std::nullopt, "")
                          : std::fabs(v->second) >= 1000
                              ? format_si(v->second, "")
                              : format_number(v->second, hint::significant_3));
    }
  }
  if (!metrics.empty())
    t.caption +=
        " Your --metrics: each the mean over the launches measured with it, as CUPTI "
        "gives it.";
  if (a.kernels.size() > top)
    t.caption += " " + std::to_string(a.kernels.size() - top) + " more kernels not listed.";
  return t;
}

ProfileTable copies_table(const ProfileAnalysis& a) {
  ProfileTable t{"copies",
                 "Copies",
                 "Memcpy per direction and memset: bytes over the summed copy time.",
                 {"Direction", "Count", "Bytes", "Time", "Achieved"},
                 {},
                 {false, true, true, true, true}};
  for (const roofline::CopySummary& c : a.copies)
    t.rows.push_back({c.direction, count_text(c.count),
                      format_si(static_cast<double>(c.bytes), "B"), time_text(c.total_ns),
                      format_si(c.bytes_per_s, "B/s")});
  return t;
}

constexpr const char* kNotTraced = "not traced";

// Which API calls the trace holds (profile --api), as a sentence; empty for all.
std::string api_coverage(ApiTracing api) {
  switch (api) {
    case ApiTracing::none:
      return "Host API calls were not traced (profile --api none): kernels and copies are "
             "tied to no thread or range, and API time is not known.";
    case ApiTracing::launches:
      return "Only the API calls that launch, copy, set memory or synchronize were traced "
             "(profile --api launches): API time counts those calls alone.";
    case ApiTracing::runtime:
      return "Every runtime call was traced, of the driver's only launches, copies and "
             "synchronizations (profile --api runtime).";
    case ApiTracing::driver:
      return "Every driver call was traced, of the runtime's only launches, copies and "
             "synchronizations (profile --api driver).";
    case ApiTracing::all:
      return "";
  }
  return "";
}

ProfileTable api_table(const ProfileAnalysis& a) {
  ProfileTable t{"api",
                 "API calls by host time",
                 "Runtime and driver calls (a runtime call's own driver calls are counted too).",
                 {"Function", "Kind", "Calls", "Host time"},
                 {},
                 {false, false, true, true}};
  if (a.api_tracing != ApiTracing::all) t.caption += " " + api_coverage(a.api_tracing);
  if (!a.api_traced()) t.when_empty = api_coverage(a.api_tracing);
  for (const roofline::ApiSummary& s : a.api)
    t.rows.push_back({s.name, to_string(s.kind), count_text(s.count), time_text(s.total_ns)});
  return t;
}

std::string range_notes(const RangeNode& n) {
  std::string out;
  if (n.not_nested > 0) out += std::to_string(n.not_nested) + " not nested (start/end)";
  if (n.unclosed > 0)
    out += (out.empty() ? "" : "; ") + std::to_string(n.unclosed) + " never closed";
  return out;
}

void add_range_rows(ProfileTable& t, const RangeNode& n, const std::string& prefix,
                    const std::string& indent, bool model, bool api_traced) {
  // Without API calls no GPU work is tied to a range: "not traced", never 0.
  auto traced = [api_traced](std::string text) { return api_traced ? text : kNotTraced; };
  t.rows.push_back({prefix + n.name, count_text(n.calls), time_text(n.wall_ns),
                    format_number(n.share_of_top, hint::share), traced(count_text(n.work.kernels)),
                    traced(time_text(n.work.kernel_ns)), traced(count_text(n.work.copies)),
                    traced(time_text(n.work.copy_ns)), traced(time_text(n.work.api_ns)),
                    time_text(n.work.gpu_idle_ns), range_notes(n)});
  if (model) {
    const std::vector<std::string> cells = model_cells(n.model);
    t.rows.back().insert(t.rows.back().end(), cells.begin(), cells.end());
  }
  for (const RangeNode& child : n.children)
    add_range_rows(t, child, prefix + indent, indent, model, api_traced);
}

ProfileTable ranges_table(const roofline::ThreadRanges& thread, const std::string& indent,
                          bool model, ApiTracing api) {
  const std::string who = "process " + std::to_string(thread.process_id) + ", thread " +
                          std::to_string(thread.thread_id);
  ProfileTable t{
      "ranges-" + std::to_string(thread.process_id) + "-" + std::to_string(thread.thread_id),
      "NVTX ranges of " + who,
      "Repeated ranges summed over their calls; share of the top-level range's time. "
      "Kernels and copies belong to the range whose thread launched them while it "
      "was open (they may run later); GPU idle is the time within the range with "
      "none of the process's GPU work running.",
      {"Range", "Calls", "Wall", "Share", "Kernels", "Kernel time", "Copies", "Copy time",
       "API time", "GPU idle", "Notes"},
      {},
      {false, true, true, true, true, true, true, true, true, true, false}};
  for (const RangeNode& root : thread.roots)
    add_range_rows(t, root, "", indent, model, api != ApiTracing::none);
  if (api != ApiTracing::all) t.caption += " " + api_coverage(api);
  if (model) add_model_columns(t);
  return t;
}

ProfileTable iterations_table(const roofline::IterationBreakdown& b, bool model, bool launches) {
  ProfileTable t{"iterations",
                 "Where each iteration of " + b.range + " goes",
                 "Each call of the top-level range " + b.range +
                     ": its wall time split into time with a kernel running, with only a copy "
                     "running, and with no GPU work (host-only time). Tracing adds host time "
                     "to every launch (CUPTI's records: 1-3.5 us a kernel measured on an H200, "
                     "README), so an iteration the host bounds runs slower traced than not.",
                 {"Iteration", "Wall", "Kernels", "Copies only", "Host only (GPU idle)"},
                 {},
                 {false, true, true, true, true}};
  const std::string none = format_number(std::nullopt, hint::share);
  if (launches) {
    t.header.push_back("Launches");
    t.numeric.push_back(true);
  }
  for (std::size_t i = 0; i < b.iterations.size(); ++i) {
    const roofline::Iteration& it = b.iterations[i];
    t.rows.push_back({std::to_string(i + 1), time_text(it.wall_ns), time_text(it.kernel_ns),
                      time_text(it.copy_ns), time_text(it.idle_ns)});
    if (launches) t.rows.back().push_back(count_text(it.launches));
    if (model)
      t.rows.back().insert(t.rows.back().end(),
                           {format_number(it.within_roof_s, hint::time_part),
                            format_number(it.lost_to_roof_s, hint::time_part),
                            count_text(it.measured_launches), time_text(it.replay_ns)});
  }
  using Spread = roofline::IterationSpread;
  auto spread_row = [&](const char* label, std::uint64_t Spread::*member) {
    t.rows.push_back({label, time_text(b.wall.*member), time_text(b.kernel.*member),
                      time_text(b.copy.*member), time_text(b.idle.*member)});
    if (launches) t.rows.back().push_back(none);
    if (model) t.rows.back().insert(t.rows.back().end(), {none, none, none, none});
  };
  spread_row("median", &Spread::median_ns);
  spread_row("min", &Spread::min_ns);
  spread_row("max", &Spread::max_ns);
  if (model) {
    t.header.insert(t.header.end(),
                    {"Kernels within roofs", "Lost to roofs", "Measured launches", "Replay"});
    t.numeric.insert(t.numeric.end(), {true, true, true, true});
    t.caption +=
        " Within / lost: the covered launches' kernel time (summed, not the union) within "
        "their roofs and beyond them. Measured launches were replayed for their counters: an "
        "iteration with any is slower than the others, and its replay (the host time of the "
        "measured launch calls) is part of its host-only time, not host overhead.";
    if (b.within_roof_s && b.lost_to_roof_s)
      t.caption += " Over all iterations: " + format_number(*b.within_roof_s, hint::time_part) +
                   " within the roofs, " + format_number(*b.lost_to_roof_s, hint::time_part) +
                   " lost to them.";
  }
  return t;
}

ProfileTable findings_table(const ProfileAnalysis& a) {
  ProfileTable t{"findings",
                 "Findings",
                 "The iterations where the host sets the pace, and ranges and kernels judged "
                 "against their roofs, ranked by the time their class names (as for a sweep's "
                 "findings).",
                 {"Finding"},
                 {},
                 {false}};
  // The subject as the tables name it: a kernel's whole name would fill a screen.
  for (const roofline::ProfileFinding& f : a.findings)
    t.rows.push_back({f.text.starts_with(f.subject)
                          ? table_name(f.subject) + f.text.substr(f.subject.size())
                          : f.text});
  return t;
}

// The ranges and kernels judged against roofs, for the charts: a range by its
// path, a kernel by its (shortened) name.
struct JudgedSubject {
  std::string name;
  const roofline::KernelModel* model = nullptr;
};

void judged_ranges(std::vector<JudgedSubject>& out, const RangeNode& n) {
  if (n.model && n.model->bounds.t_kernel_roof > 0) out.push_back({n.path, &*n.model});
  for (const RangeNode& c : n.children) judged_ranges(out, c);
}

std::vector<JudgedSubject> judged_subjects(const ProfileAnalysis& a) {
  std::vector<JudgedSubject> out;
  for (const roofline::ThreadRanges& t : a.threads)
    for (const RangeNode& root : t.roots) judged_ranges(out, root);
  for (const roofline::KernelSummary& k : a.kernels)
    if (k.model && k.model->bounds.t_kernel_roof > 0)
      out.push_back({table_name(k.name), &*k.model});
  return out;
}

std::string main_class(const roofline::PointBounds& b) {
  std::optional<PrecisionClass> best;
  for (PrecisionClass p : kAllPrecisionClasses)
    if (b.work[static_cast<std::size_t>(p)] > 0 &&
        (!best || b.work[static_cast<std::size_t>(p)] > b.work[static_cast<std::size_t>(*best)]))
      best = p;
  return best ? to_string(*best) : "";
}

// The classic and the time-based roofline of the judged ranges and kernels, on
// the charts the sweeps use (plots/charts.hpp), each subject a point at its T_k.
void profile_charts(std::vector<detail::Block>& doc, const ProfileAnalysis& a,
                    const std::string& anchor) {
  const std::vector<JudgedSubject> subjects = judged_subjects(a);
  if (!a.roofs || subjects.empty()) return;
  doc.push_back(detail::heading(3, "Rooflines of the ranges and kernels", anchor + "-rooflines"));
  std::vector<PointSample> samples;
  std::vector<Point> points(subjects.size());
  std::vector<roofline::BoundedPoint> bounded;
  for (std::size_t i = 0; i < subjects.size(); ++i) {
    const roofline::PointBounds& b = subjects[i].model->bounds;
    PointSample s;
    s.label = subjects[i].name;
    s.precision_class = main_class(b);
    for (Level l : kAllLevels) s.intensity[static_cast<std::size_t>(l)] = b.level(l).intensity;
    s.achieved = b.achieved;
    s.time_s = b.kernel_s;
    s.time_name = "T_k";
    s.bound = subjects[i].model->classification.label();
    s.efficiency = b.efficiency;
    samples.push_back(std::move(s));
    points[i].op = subjects[i].name;
    bounded.push_back({i, &points[i], &b});
  }
  doc.push_back(detail::chart(
      classic_roofline_chart(*a.roofs, samples, "Hierarchical Roofline: ranges and kernels"),
      anchor + "-roofline.svg",
      "Each NVTX range and kernel with measured counters at its intensity and achieved FLOP/s "
      "over its kernel time T_k (covered launches only)."));
  roofline::ComplexityOptions options;
  options.use_kernel_time = true;
  const roofline::ComplexityChart complexity =
      roofline::complexity_chart(bounded, *a.roofs, options);
  std::vector<ComplexityMark> marks;
  for (const roofline::ComplexityPoint& cp : complexity.points) {
    const JudgedSubject& s = subjects[cp.index];
    marks.push_back({s.name + ": " + s.model->classification.label() + ", T_k " +
                         format_number(s.model->bounds.kernel_s, hint::time_part) + ", " +
                         format_number(s.model->bounds.efficiency, hint::share) + " of the roof",
                     s.model->classification.label()});
  }
  doc.push_back(detail::chart(
      time_complexity_chart(complexity, marks, "Time-based roofline: ranges and kernels"),
      anchor + "-time-roofline.svg",
      "Work against DRAM bytes of each range and kernel, and where its kernel time T_k would "
      "put it at the roof: the segment between the two is the time lost to the roof."));
}

std::string provenance_value(const nlohmann::json& value) {
  return value.is_structured() ? value.dump() : param_value_text(value);
}

// "K=V; K=V" of an object of strings (the profiled program's environment).
std::string assignments(const nlohmann::json& object) {
  std::string out;
  for (const auto& [name, value] : object.items())
    out += (out.empty() ? "" : "; ") + name + "=" + provenance_value(value);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> provenance_rows(const nlohmann::json& provenance) {
  std::vector<std::pair<std::string, std::string>> rows;
  if (!provenance.is_object()) return rows;
  for (const auto& [key, value] : provenance.items()) {
    if (key != "profile" || !value.is_object()) {
      rows.emplace_back(key, provenance_value(value));
      continue;
    }
    // The profile's own items one a row; the libraries have their table.
    for (const auto& [item, detail] : value.items()) {
      if (item == "libraries") continue;
      std::string text = provenance_value(detail);
      if (item == "command" && detail.is_array()) {
        text.clear();
        for (const nlohmann::json& word : detail)
          text += (text.empty() ? "" : " ") + provenance_value(word);
      } else if (item == "environment" && detail.is_object()) {
        text = assignments(detail);
      }
      rows.emplace_back("profile." + item, text);
    }
  }
  return rows;
}

ProfileTable libraries_table(const nlohmann::json& provenance) {
  ProfileTable t;
  t.id = "libraries";
  t.title = "CUDA libraries the program loaded";
  t.caption =
      "As each process had them loaded at its exit, with the version the library reports: the "
      "program's kernels come from these, not from the libraries timeroof was built with.";
  t.header = {"Process", "Library", "Version", "Path"};
  t.numeric = {true, false, false, false};
  const nlohmann::json* libraries = nullptr;
  if (provenance.is_object() && provenance.contains("profile") &&
      provenance["profile"].is_object() && provenance["profile"].contains("libraries"))
    libraries = &provenance["profile"]["libraries"];
  if (libraries == nullptr || !libraries->is_array()) return t;
  for (const nlohmann::json& library : *libraries) {
    if (!library.is_object()) continue;
    const auto text = [&](const char* key) {
      return library.contains(key) ? provenance_value(library[key]) : std::string("-");
    };
    const std::string version = text("version");
    t.rows.push_back(
        {text("process_id"), text("name"), version.empty() ? "-" : version, text("path")});
  }
  return t;
}

std::string profile_summary(const ProfileAnalysis& a) {
  std::string out = std::to_string(a.records) + " records over " + time_text(a.span_ns()) +
                    "; GPU busy " + time_text(a.gpu_busy_ns) + " (" +
                    share_text(a.gpu_busy_ns, a.span_ns()) + " of the span): kernels " +
                    time_text(a.kernel_ns) + ", copies " + time_text(a.copy_ns) + ".";
  const roofline::RangeWork& u = a.unattributed;
  if (a.api_tracing != ApiTracing::all) out += " " + api_coverage(a.api_tracing);
  if (a.api_traced() && u.kernels + u.copies > 0)
    out += " Unattributed (no launching call in the trace): kernels " + std::to_string(u.kernels) +
           ", copies " + std::to_string(u.copies) + ", " + time_text(u.kernel_ns + u.copy_ns) +
           " of GPU time.";
  if (with_model(a)) out += " " + model_summary(a);
  return out;
}

std::string model_summary(const ProfileAnalysis& a) {
  std::string out = "Counters: " + std::to_string(a.counter_records) + " measured launches";
  if (a.counters_unmatched > 0)
    out += " (" + std::to_string(a.counters_unmatched) + " tied to no kernel record, left out)";
  out += "; ";
  out += a.roofs
             ? "roofs of " +
                   (a.roofs_from.empty() ? std::string("the given machine") : a.roofs_from) + "."
             : std::string(roofline::kNoProfileRoofs) + ".";
  if (a.program) {
    const roofline::KernelModel& p = *a.program;
    out += " The model covers " + std::to_string(p.launches) + " of " +
           std::to_string(p.launches + p.not_covered) + " kernel launches (" +
           std::to_string(p.measured) + " measured)";
    if (p.bounds.t_lower_bound > 0)
      out += "; their lower bound " + format_number(p.bounds.t_lower_bound, hint::time_part) +
             ", the program's span " + format_number(p.time_s, hint::time_part) + ": headroom " +
             format_number(p.headroom, hint::ratio);
    out += ".";
  }
  return out;
}

std::vector<ProfileTable> profile_tables(const ProfileAnalysis& a, const std::string& indent,
                                         std::size_t top_kernels) {
  std::vector<ProfileTable> out;
  out.push_back(kernels_table(a, top_kernels));
  out.push_back(copies_table(a));
  out.push_back(api_table(a));
  for (const roofline::ThreadRanges& thread : a.threads)
    out.push_back(ranges_table(thread, indent, with_model(a), a.api_tracing));
  if (a.iterations) out.push_back(iterations_table(*a.iterations, with_model(a), a.api_traced()));
  if (!a.findings.empty()) out.push_back(findings_table(a));
  return out;
}

void detail::profile_section(std::vector<Block>& doc, const ProfileAnalysis& analysis,
                             const nlohmann::json& provenance, const std::string& anchor) {
  doc.push_back(heading(2, "Profile", anchor));
  doc.push_back(paragraph(profile_summary(analysis)));
  for (ProfileTable& t : profile_tables(analysis, "· ")) {
    doc.push_back(heading(3, t.title, anchor + "-" + t.id));
    if (t.rows.empty()) {
      doc.push_back(paragraph(t.when_empty));
      continue;
    }
    std::vector<std::size_t> nowrap;
    for (std::size_t c = 0; c < t.numeric.size(); ++c)
      if (t.numeric[c]) nowrap.push_back(c);
    doc.push_back(table(std::move(t.header), std::move(t.rows), t.id, t.caption));
    doc.back().nowrap = std::move(nowrap);
  }
  profile_charts(doc, analysis, anchor);
  doc.push_back(heading(3, "Profile provenance", anchor + "-provenance"));
  std::vector<std::vector<std::string>> rows;
  for (const auto& [key, value] : provenance_rows(provenance)) rows.push_back({key, value});
  if (rows.empty())
    doc.push_back(paragraph("No provenance was recorded."));
  else
    doc.push_back(table({"Item", "Value"}, std::move(rows), "provenance"));
  if (ProfileTable libraries = libraries_table(provenance); !libraries.rows.empty()) {
    doc.push_back(heading(3, libraries.title, anchor + "-" + libraries.id));
    doc.push_back(table(std::move(libraries.header), std::move(libraries.rows), libraries.id,
                        libraries.caption));
  }
}

ProfileReport render_profile_report(const std::vector<TraceEvent>& events,
                                    const nlohmann::json& provenance,
                                    const roofline::ProfileOptions& options) {
  std::vector<detail::Block> doc;
  doc.push_back(detail::heading(1, "timeroof profile"));
  doc.push_back(detail::contents());
  detail::profile_section(doc, roofline::analyze_profile(events, options), provenance, "profile");
  return {detail::render_html(doc), detail::render_markdown(doc, ChartFormat::svg)};
}

nlohmann::json profile_provenance(const RunRecord& record) {
  const Run& run = record.run;
  nlohmann::json provenance = {{"command_line", run.command_line},
                               {"gpu", run.machine.gpu.name},
                               {"driver", run.machine.gpu.versions.driver},
                               {"host", run.host},
                               {"tool_version", run.tool_version},
                               {"git_sha", run.git_sha},
                               {"started_at", run.started_at},
                               {"finished_at", run.finished_at},
                               {"status", run.status}};
  if (run.spec.contains("profile")) provenance["profile"] = run.spec["profile"];
  return provenance;
}

}  // namespace timeroof::plots
