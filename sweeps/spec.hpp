// Sweep specs: which points of an operator family a sweep measures, and how
// (host transfers, pinned or pageable host memory, warm or cold L2). A spec comes
// from command-line flags, a TOML file or the family's default sweep; every point
// is validated once, by building its problem (family.problem), before any GPU work, so a bad spec
// fails with a usage error (exit 1) that names the key and the allowed values.
//
// Value lists (flags, and strings in a TOML file):
//   16            one value
//   1,2,4         a list; items may be ranges: 1,3..9:+2
//   1..1024:x2    geometric range: 1, 2, 4, ..., 1024 (factor >= 2, start >= 1)
//   16..128:+16   arithmetic range: 16, 32, ..., 128 (step >= 1)
//   3..9          step +1
//   fp16,fp32     text values (text axes take lists, never ranges); matched
//                 case-insensitively and stored as the family spells them
// A range includes its end when a step lands on it (16..100:x2 is 16, 32, 64).
// Repeated values are kept once (first occurrence). An integer axis may also name
// words (ParamAxis::allowed of an integer axis, e.g. conv2d's pad = same). An
// allowed value with a '<' is a pattern (conv2d's eng<N>[ <knob>=<value>...]): an
// item starting with the text before the '<' is kept as written, and the family's
// problem checks the rest (matches_pattern).
//
// Points: the Cartesian product of the given axes, nested in the family's axis
// order with the FIRST axis varying fastest (conv2d lists batch first, so a sweep
// over batch is contiguous and precision, the last axis, changes slowest). Each
// axis keeps the order of its values as written. An axis the spec does not set
// takes ONE value, its baseline (the first of ParamAxis::defaults), not the default
// sweep's values: `sweep conv2d --batch 1..1024:x2` is 11 points at the paper's
// baseline, not 11 x the default grid. Identical points are kept once.
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/family.hpp"

namespace timeroof {

// Host<->device data transfer timed with each call.
enum class TransferMode {
  none,                 // operator only, data resident on the device
  h2d_input,            // copy the input(s) host -> device, then the operator
  h2d_input_d2h_output  // and copy the output device -> host
};
const char* to_string(TransferMode mode);  // "none", "h2d_input", "h2d_input_d2h_output"
// Throws a usage error naming `transfer` and the allowed values; dashes read as underscores.
TransferMode parse_transfer_mode(std::string_view text);
// Why `op` cannot be swept with `mode` (it lists no inputs() to copy in, or for
// h2d_input_d2h_output no outputs() to copy back), in one line; empty when it can.
// Needs no GPU: roles and sizes are known from construction.
std::string transfer_unavailable(const Problem& op, TransferMode mode);

struct SweepSpec {
  std::string name;    // flags: the family's name; TOML: [sweep] name or the file's stem;
                       // default: "<family>-default"
  std::string family;  // "conv2d"
  std::vector<nlohmann::json> points;  // complete params objects, in run order (seq = index)
  TransferMode transfer = TransferMode::none;
  bool pinned_host = true;  // host buffers of the transfers: pinned, or pageable
  bool cold_l2 = false;     // flush L2 before each timed call
  // Raw CUPTI metrics collected beside the catalog's for every point (--metrics,
  // [sweep] metrics), in the order given, each once. The spec checks their spelling
  // only; the chip's list is checked where CUPTI is (src/cli, before any GPU work).
  std::vector<std::string> metrics;
  // What the user wrote, for provenance: {"kind": "flags", "family", "flags": [[key,
  // value], ...]}, {"kind": "toml", "path", "text"} or {"kind": "default", "family"}.
  nlohmann::json source;
};

// {"name", "family", "transfer", "pinned_host", "cold_l2", "point_count", "points",
//  "source"}, and "metrics" only when the spec has some (so a spec without them is
//  stored byte for byte as before); numbers stay numbers, booleans booleans.
nlohmann::json to_json(const SweepSpec& spec);
// The inverse of to_json (e.g. for --resume from a stored run); throws a usage error
// on a missing or mistyped field. Does not validate the points (validate_points).
SweepSpec spec_from_json(const nlohmann::json& json);

// A comma-separated list of raw CUPTI metric names ("dram__bytes_read.sum,
// sm__cycles_elapsed.avg"): items trimmed, repeats kept once. An empty item, or a
// name that is not a metric's spelling (letters, digits, '_' and '.', with a "__"
// between the unit and the counter), is a usage error naming `where` and the fix.
std::vector<std::string> parse_metric_list(std::string_view text, const std::string& where);
// Appends the metrics `text` lists to spec.metrics, skipping those already there.
void add_metrics(SweepSpec& spec, std::string_view text, const std::string& where);

// Most points one spec may have (a typo like 1..100000 fails early).
inline constexpr std::size_t kMaxSweepPoints = 100'000;
// The value-list syntax above in one line, for --help and error messages.
extern const char* const kValueListSyntax;

// Whether `item` starts (case-insensitively) with the text before the '<' of the
// pattern `allowed`; false when `allowed` is no pattern.
bool matches_pattern(const std::string& allowed, std::string_view item);

// The values of `axis` that `text` lists (integers as JSON integers, text as the
// family's spelling). Errors name `where` (default: the axis' key) and the allowed
// values or syntax: an empty item, a non-integer, an empty range (8..1:x2), a step
// <= 0, a factor < 2, a range on a text axis, an unknown text value.
std::vector<nlohmann::json> parse_value_list(const ParamAxis& axis, std::string_view text,
                                             const std::string& where = "");

// Each axis at its baseline (defaults[0]).
nlohmann::json baseline_point(const OperatorFamily& family);

// Builds every point's problem (family.problem: which validates it), and with a
// transfer mode checks that each has tensors to move (transfer_unavailable); the error names the
// point's seq and params.
void validate_points(const SweepSpec& spec, const OperatorFamily& family);

// Flags: (key, value list) pairs. Keys are the family's axes or the options
//   transfer none|h2d_input|h2d_input_d2h_output, host pinned|pageable,
//   l2 warm|cold, name TEXT, metrics NAME,NAME,... (raw CUPTI metrics);
// dashes and underscores in keys are the same ("bwd-x" == "bwd_x"), a leading "--" is
// ignored. An unknown or repeated key is a usage error that lists the allowed keys.
// The points are validated before this returns.
SweepSpec spec_from_flags(const OperatorFamily& family,
                          const std::vector<std::pair<std::string, std::string>>& flags);

// A TOML file:
//   [sweep]                  family (required); name, transfer, host, l2, metrics
//                            (optional; metrics a string "a,b" or a list of strings)
//   family = "conv2d"
//   [axes]                   a product (rules above); each key a scalar, a list, or a
//   batch = "1..1024:x2"     value-list string
//   precision = ["fp16", "fp32"]
//   [[point]]                explicit points, after the product; a key left out takes its
//   batch = 16               baseline (not [axes]'s value); a list or range in a [[point]]
//   filter = 9               makes a small product of its own
// Without [axes] and [[point]] the spec is the baseline point. An unknown table or key,
// a wrong type, or malformed TOML is a usage error with the file, line and column, the
// key and the allowed keys or values. `lookup` resolves the family's name (it throws a
// usage error for an unknown one); the one-argument form uses find_family.
using FamilyLookup = std::function<const OperatorFamily&(const std::string& name)>;
SweepSpec spec_from_toml(const std::string& path, const FamilyLookup& lookup);
// The same for TOML already read (`path` names it in errors and is its stem's source).
SweepSpec spec_from_toml_text(const std::string& text, const std::string& path,
                              const FamilyLookup& lookup);

// The family's default sweep (default_points), validated.
SweepSpec default_spec(const OperatorFamily& family);

// By family name, through find_family (sweeps/families.cpp).
inline SweepSpec spec_from_flags(const std::string& family,
                                 const std::vector<std::pair<std::string, std::string>>& flags) {
  return spec_from_flags(find_family(family), flags);
}
inline SweepSpec spec_from_toml(const std::string& path) {
  return spec_from_toml(
      path, [](const std::string& name) -> const OperatorFamily& { return find_family(name); });
}
inline SweepSpec default_spec(const std::string& family) {
  return default_spec(find_family(family));
}

// --dry-run's time model, the runner's steps (sweeps/runner.hpp) per point:
//   roof     = max(FLOPs / peak(precision, math), min_bytes / bytes_per_s)
//   run      = max(roof / expected_efficiency, launches x launch_s) + call_overhead_s
//   xfer     = h2d_bytes / B_h2d + d2h_bytes / B_d2h (the operator's inputs() and, for
//              h2d_input_d2h_output, outputs(); B pinned or pageable; 0 for transfer none)
//   call     = run + xfer (copies and operator are serial on one stream)
//   sample   = call + sample_overhead_s (each timed call is synchronized and read back)
//   warm-up  = max(warmup_calls x sample, warmup_s)
//   timing   = T_call + T_stream + T_graph, each until its interval is narrow
//              enough, at most its budget (RunnerOptions' stop rules):
//              T_call   = min(convergence x call_min_samples x sample, call_budget_s)
//              T_stream = min(convergence x stream_min_samples x max(call, 200 us),
//              stream_budget_s) T_graph  = graph_capture_s + the same as T_stream with
//              graph_budget_s
//   trace    = trace_calls x call + trace_overhead_s
//   counters = counter_passes x (counter_pass_s / counter_batch
//                                + 2 x launches x counter_range_s + 2 x profiled_slowdown x run)
//              (the point's share of its batch's collection: every pass replays a warm-up
//              call and the call, kernels only, each kernel one range)
//   point    = setup_s + check_s + warm-up + timing + trace + counters
// FLOPs, min_bytes and launches are the problem's (family.problem, no GPU work; launches
// = Problem::expected_launches()). The peak is picked by the point's "precision" and
// "math" params: fp32, or math fma_only, -> cuda_core_flops_per_s; tf32 ->
// tf32_flops_per_s; fp16 / bf16 -> tensor_flops_per_s; no "precision" ->
// cuda_core_flops_per_s. The caller passes the machine's measured ceilings when it
// has them (fp32_fma, tensor_fp16, tensor_tf32, hbm, the transfer ones); the other
// defaults were fitted to the steps' wall times an H200 recorded for the default
// sweeps (details["runner_seconds"]: conv2d 108 points in 27 s, lstm 152 in 42 s;
// with that H200's roofs this model says 25 s and 41 s). The CPU reference of small
// shapes and exhaustive algorithm search are not modelled.
struct DryRunRoofs {
  double cuda_core_flops_per_s = 50e12;
  double tensor_flops_per_s = 600e12;  // fp16 / bf16 on Tensor Cores
  double tf32_flops_per_s = 300e12;
  double bytes_per_s = 3.5e12;
  double setup_s = 0.003;  // allocate, fill with random data, choose the algorithm
  double check_s = 0.02;   // verify the output once (device comparison)
  int warmup_calls = 3;
  double warmup_s = 0.02;
  double sample_overhead_s = 2e-4;  // per timed call: sync, event read
  // The stop rules' minimum samples and budgets (RunnerOptions), and how many
  // times the minimum a time typically needs before its interval is within +-1%.
  int call_min_samples = 30;
  double call_budget_s = 0.3;
  int stream_min_samples = 16;
  double stream_budget_s = 0.2;
  double graph_budget_s = 0.2;
  double stream_sample_s = 200e-6;  // a warm back-to-back sample spans at least this
  double graph_capture_s = 0.002;   // capture, instantiate, upload and the pilot replays
  double convergence = 2;
  // Host-side windows (RunnerOptions::host_windows): a point whose launches take
  // >= 2% of its call is revisited this many times less one, each revisit a
  // fresh prepare and warm-up in the timing worker and T_call and T_stream at
  // revisit_budget_share of their budgets.
  int host_windows = 3;
  double revisit_budget_share = 0.5;
  int trace_calls = 5;
  double trace_overhead_s = 0.0025;
  int counter_passes = 2;         // the catalog's plan for fp16 conv and LSTM on GH100
  int counter_batch = 16;         // points per collection
  double counter_pass_s = 0.12;   // per pass of a collection: CUPTI's Start/Stop
  double counter_range_s = 1e-3;  // per profiled kernel per pass
  double profiled_slowdown = 2;   // profiled kernels run this much slower
  double call_overhead_s = 5e-6;  // launch and synchronisation per call
  // The default sweeps' cuDNN convs took ~4.5x their roof time (time-weighted, on an
  // H200), and LSTM calls ~6 us per kernel launch (launch-bound).
  double expected_efficiency = 0.22;
  double launch_s = 6e-6;
  double h2d_pinned_bytes_per_s = 50e9;
  double d2h_pinned_bytes_per_s = 50e9;
  double h2d_pageable_bytes_per_s = 10e9;
  double d2h_pageable_bytes_per_s = 15e9;
};

struct PointEstimate {
  double flops = 0;       // analytic, one call
  double min_bytes = 0;   // analytic, one call
  double h2d_bytes = 0;   // copied host -> device per call (transfer mode)
  double d2h_bytes = 0;   // copied device -> host per call
  double transfer_s = 0;  // the copies at the transfer bandwidths
  double call_s = 0;      // one call at the roof, with its overhead and copies
  double point_s = 0;     // everything the runner does for the point
};
PointEstimate estimate_point(const nlohmann::json& point, const OperatorFamily& family,
                             const DryRunRoofs& roofs = {},
                             TransferMode transfer = TransferMode::none, bool pinned_host = true);

// --dry-run: a header (name, family, options, point count, the params every point
// shares), a table with one row per point (seq, the params that vary across points,
// GFLOP, MB, with a transfer mode the MB copied per call, estimated time per call
// and per point), and the total estimate with the model's figures. `only` (a
// shard's seqs): list and total only those points, keeping their seqs.
std::string describe_points(const SweepSpec& spec, const OperatorFamily& family,
                            const DryRunRoofs& roofs = {}, const std::set<int>* only = nullptr);
inline std::string describe_points(const SweepSpec& spec, const DryRunRoofs& roofs = {},
                                   const std::set<int>* only = nullptr) {
  return describe_points(spec, find_family(spec.family), roofs, only);
}

}  // namespace timeroof
