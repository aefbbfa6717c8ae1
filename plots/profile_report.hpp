// The printed views of a profile (issue 17), from one roofline::analyze_profile
// of its trace: the same tables for the console (`timeroof analyze` of a
// profile run, src/cli/profile_console.hpp) and for the report's section
// (HTML and Markdown through the report's document model), so both read alike:
// - a summary: records, span, GPU busy time, kernel and copy time, unattributed work;
// - the top kernels by total time (calls, total, share of GPU busy, median, min, max);
// - copies per direction (count, bytes, time, achieved bandwidth);
// - API functions by host time;
// - per (process, thread) the NVTX range tree, indented, with wall time, share
//   of its top-level range, calls and the GPU work each range launched;
// - where each iteration's time goes: kernel, copy and host-only (GPU idle) time.
// Where the trace has counters (roofline::KernelModel), the kernel and range
// tables gain the model's columns (launches measured and covered, class,
// efficiency, Tensor-Core share, lower bound, headroom), the iterations their
// kernel time within and lost to the roofs and their measured launches, and a
// table of findings follows; without counters the tables read as before.
// Host-only.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "core/trace_events.hpp"
#include "roofline/profile_analysis.hpp"

namespace timeroof::plots {

struct ProfileTable {
  std::string id;  // anchor and row class: "kernels", "copies", "api", "ranges-P-T", "iterations"
  std::string title;    // "Top kernels by total time"
  std::string caption;  // a sentence on what the numbers mean
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> numeric;  // per column: right-aligned, never wrapped
  // What an empty table says: nothing of its kind happened, or it was not traced.
  std::string when_empty = "None in the trace.";
};

// How many kernels the top-kernels table lists; the rest are counted in its caption.
inline constexpr std::size_t kProfileTopKernels = 15;

// What a profile's printers list as its provenance: the run's command line, GPU,
// host, versions, times, status and its spec's "profile" object (the profiled
// command, environment and exit).
nlohmann::json profile_provenance(const RunRecord& record);

// The provenance as (item, value) rows: the profile's own items one a row
// ("profile.command" as a command line, "profile.environment" as K=V; ...), its
// libraries left to libraries_table.
std::vector<std::pair<std::string, std::string>> provenance_rows(const nlohmann::json& provenance);
// The CUDA libraries the program loaded (profile.libraries: process, library,
// version, path); no rows where none were recorded (a killed program, an older run).
ProfileTable libraries_table(const nlohmann::json& provenance);

// One line: "46 records over 670 us; GPU busy 283 us (42% of the span): ...",
// with model_summary's where the trace has counters.
std::string profile_summary(const roofline::ProfileAnalysis& analysis);
// "Counters: 3 measured launches (...); roofs of run 1. The model covers 6 of 10
// kernel launches (2 measured); their lower bound 114 us, the program's span
// 670 us: headroom 5.9x." Without roofs it names the fix.
std::string model_summary(const roofline::ProfileAnalysis& analysis);

// The tables, in the order above; a tree's rows indent each level by `indent`
// ("  " on the console, where spaces align; a visible mark in the report).
std::vector<ProfileTable> profile_tables(const roofline::ProfileAnalysis& analysis,
                                         const std::string& indent,
                                         std::size_t top_kernels = kProfileTopKernels);

// The report of a profile run: a self-contained HTML page and the same in
// Markdown, its kernels judged on `options.roofs` where given.
// `provenance` (the run's: command, GPU, versions) is listed as it is.
struct ProfileReport {
  std::string html;
  std::string markdown;
};
ProfileReport render_profile_report(const std::vector<TraceEvent>& events,
                                    const nlohmann::json& provenance,
                                    const roofline::ProfileOptions& options = {});

namespace detail {
struct Block;
// The profile's section as blocks of the report's document model
// (report_document.hpp), its headings' ids starting with `anchor`: for a run
// report that holds a profile run beside sweeps.
void profile_section(std::vector<Block>& doc, const roofline::ProfileAnalysis& analysis,
                     const nlohmann::json& provenance, const std::string& anchor);
}  // namespace detail

}  // namespace timeroof::plots
