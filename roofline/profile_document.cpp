#include "roofline/profile_document.hpp"

#include <cmath>

#include "roofline/analysis.hpp"
#include "timeroof/version.hpp"

namespace timeroof::roofline {

namespace {

using nlohmann::json;

double seconds(std::uint64_t ns) {
  return static_cast<double>(ns) * 1e-9;
}
double count(std::uint64_t n) {
  return static_cast<double>(n);
}

// A number, or null where it is missing or not finite (JSON has no infinity).
json num(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

json quantities_json(const NamedQuantities& quantities, json into = json::object()) {
  for (const auto& [name, value] : quantities) into[name] = num(value);
  return into;
}

json model_json(const std::optional<KernelModel>& m) {
  if (!m) return nullptr;
  return quantities_json(model_quantities(*m), {{"class", classification_json(m->classification)},
                                                {"limiting_roof", m->bounds.limiting_roof},
                                                {"extrapolated", m->extrapolated()},
                                                {"notes", m->bounds.notes}});
}

json range_json(const RangeNode& n, ApiTracing api) {
  json children = json::array();
  for (const RangeNode& c : n.children) children.push_back(range_json(c, api));
  return quantities_json(range_quantities(n, api), {{"name", n.name},
                                                    {"path", n.path},
                                                    {"domain", n.domain},
                                                    {"not_nested", n.not_nested},
                                                    {"unclosed", n.unclosed},
                                                    {"model", model_json(n.model)},
                                                    {"children", children}});
}

json iterations_json(const ProfileAnalysis& a) {
  if (!a.iterations) return nullptr;
  const IterationBreakdown& b = *a.iterations;
  json list = json::array();
  for (const Iteration& it : b.iterations)
    list.push_back({{"start_s", seconds(it.start_ns - a.origin_ns)},
                    {"wall_s", seconds(it.wall_ns)},
                    {"kernel_s", seconds(it.kernel_ns)},
                    {"copy_s", seconds(it.copy_ns)},
                    {"idle_s", seconds(it.idle_ns)},
                    {"launches", it.launches},
                    {"measured_launches", it.measured_launches},
                    {"replay_s", seconds(it.replay_ns)},
                    {"within_roof_s", num(it.within_roof_s)},
                    {"lost_to_roof_s", num(it.lost_to_roof_s)}});
  return {{"range", b.range},
          {"iterations", list},
          {"within_roof_s", num(b.within_roof_s)},
          {"lost_to_roof_s", num(b.lost_to_roof_s)}};
}

}  // namespace

NamedQuantities model_quantities(const KernelModel& m) {
  const PointBounds& b = m.bounds;
  NamedQuantities q = {{"launches_covered", count(m.launches)},
                       {"launches_measured", count(m.measured)},
                       {"launches_not_covered", count(m.not_covered)},
                       {"not_covered_kernel_s", seconds(m.not_covered_ns)},
                       {"launches_timed_by_replay", count(m.timed_by_replay)},
                       {"t_k_s", b.kernel_s},
                       {"work_flop", b.total_work}};
  for (PrecisionClass p : kAllPrecisionClasses)
    if (b.work[static_cast<std::size_t>(p)] > 0)
      q.emplace_back(std::string(to_string(p)) + "_flop", b.work[static_cast<std::size_t>(p)]);
  for (Level l : kAllLevels) q.emplace_back(std::string(to_string(l)) + "_bytes", b.level(l).bytes);
  for (Level l : kAllLevels)
    q.emplace_back("intensity_" + std::string(to_string(l)) + "_flop_per_byte",
                   b.level(l).intensity);
  q.insert(q.end(),
           {{"t_compute_s", b.t_compute}, {"t_cuda_s", b.t_cuda}, {"t_tensor_s", b.t_tensor}});
  for (Level l : kAllLevels)
    q.emplace_back("t_mem_" + std::string(to_string(l)) + "_s", b.level(l).time_s);
  q.insert(q.end(), {{"t_kernel_roof_s", b.t_kernel_roof},
                     {"efficiency", b.efficiency},
                     {"tensor_share", b.tensor_share},
                     {"lower_bound_s", b.t_lower_bound},
                     {"time_s", m.time_s},
                     {"headroom", m.headroom}});
  return q;
}

NamedQuantities kernel_quantities(const KernelSummary& k) {
  return {{"calls", count(k.calls)},          {"total_s", seconds(k.total_ns)},
          {"median_s", seconds(k.median_ns)}, {"min_s", seconds(k.min_ns)},
          {"max_s", seconds(k.max_ns)},       {"share_of_busy", k.share_of_busy}};
}

NamedQuantities range_quantities(const RangeNode& n, ApiTracing api) {
  const bool traced = api != ApiTracing::none;
  auto if_traced = [traced](double v) { return traced ? std::optional<double>(v) : std::nullopt; };
  return {{"calls", count(n.calls)},
          {"wall_s", seconds(n.wall_ns)},
          {"share_of_top", n.share_of_top},
          {"kernels", if_traced(count(n.work.kernels))},
          {"traced_kernel_s", if_traced(seconds(n.work.kernel_ns))},
          {"copies", if_traced(count(n.work.copies))},
          {"copy_s", if_traced(seconds(n.work.copy_ns))},
          {"api_s", if_traced(seconds(n.work.api_ns))},
          {"gpu_idle_s", seconds(n.work.gpu_idle_ns)}};
}

json profile_analysis_json(const RunRecord& record, const ProfileAnalysis& a) {
  const Run& run = record.run;
  json kernels = json::array(), copies = json::array(), api = json::array(),
       threads = json::array(), findings = json::array();
  for (const KernelSummary& k : a.kernels)
    kernels.push_back(quantities_json(
        kernel_quantities(k),
        {{"name", k.name}, {"model", model_json(k.model)}, {"metrics", k.metrics}}));
  for (const CopySummary& c : a.copies)
    copies.push_back({{"direction", c.direction},
                      {"count", c.count},
                      {"bytes", c.bytes},
                      {"total_s", seconds(c.total_ns)},
                      {"bytes_per_s", num(c.bytes_per_s)}});
  for (const ApiSummary& s : a.api)
    api.push_back({{"kind", to_string(s.kind)},
                   {"name", s.name},
                   {"count", s.count},
                   {"total_s", seconds(s.total_ns)}});
  for (const ThreadRanges& t : a.threads) {
    json roots = json::array();
    for (const RangeNode& n : t.roots) roots.push_back(range_json(n, a.api_tracing));
    threads.push_back(
        {{"process_id", t.process_id}, {"thread_id", t.thread_id}, {"ranges", roots}});
  }
  for (const ProfileFinding& f : a.findings)
    findings.push_back({{"subject", f.subject},
                        {"text", f.text},
                        {"explained_s", f.explained_s},
                        {"label", f.label}});
  return {{"run",
           {{"id", run.id},
            {"uuid", run.uuid},
            {"status", run.status},
            {"started_at", run.started_at},
            {"command_line", run.command_line},
            {"gpu", run.machine.gpu.name},
            {"chip", run.machine.gpu.chip}}},
          {"roofs_from", a.roofs ? json(a.roofs_from) : json(nullptr)},
          {"roofs_note", a.roofs ? json(nullptr) : json(kNoProfileRoofs)},
          {"roofs", a.roofs ? roofs_json(*a.roofs) : json(nullptr)},
          {"summary",
           {{"records", a.records},
            {"api_traced", to_string(a.api_tracing)},
            {"span_s", seconds(a.span_ns())},
            {"gpu_busy_s", seconds(a.gpu_busy_ns)},
            {"kernel_s", seconds(a.kernel_ns)},
            {"copy_s", seconds(a.copy_ns)},
            {"unattributed_kernels", a.unattributed.kernels},
            {"unattributed_copies", a.unattributed.copies},
            {"unattributed_s", seconds(a.unattributed.kernel_ns + a.unattributed.copy_ns)}}},
          {"counters", {{"records", a.counter_records}, {"unmatched", a.counters_unmatched}}},
          {"program", model_json(a.program)},
          {"kernels", kernels},
          {"copies", copies},
          {"api", api},
          {"threads", threads},
          {"iterations", iterations_json(a)},
          {"findings", findings}};
}

json profile_document(const std::vector<RunRecord>& records,
                      const std::vector<ProfileAnalysis>& analyses) {
  json runs = json::array();
  for (std::size_t i = 0; i < records.size(); ++i)
    runs.push_back(profile_analysis_json(records[i], analyses.at(i)));
  return {{"format", kProfileAnalysisFormat},
          {"schema_version", kProfileAnalysisSchemaVersion},
          {"analysed_by", std::string("timeroof ") + kToolVersion + " (" + kGitSha + ")"},
          {"runs", runs}};
}

}  // namespace timeroof::roofline
