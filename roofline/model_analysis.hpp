// The analysis of a model run (issue 18): a run whose spec holds a model's layout
// (sweeps/model_table.hpp: the layers, their counts and, per batch, the point of
// each). Computed once per run, from the points' bounds and classes of
// analysis.hpp (no bound is computed here), and read by every printer.
//
// Per batch b, over the layers i with count c_i and the point's per-call times:
//   T_model(b)       = sum_i c_i x T_i      (T: T_stream, else T_call, as bounds.hpp)
//   T_graph_model(b) = sum_i c_i x T_graph,i and T_k_model(b) = sum_i c_i x T_k,i,
//                      each only when every layer has that time
//   T_lb_model(b)    = sum_i c_i x T_lb,i   (Benanza's whole-model lower bound: each
//                      layer's time-based roofline bound T_lb, bounds.hpp)
//   headroom(b)      = T_model / T_lb_model
//   gap_i            = c_i x (T_i - T_lb,i): the layers ranked by it explain the gap
//                      T_model - T_lb_model (their shares of it)
//   share(type)      = sum over the layers of that operator type of c_i x T_i,
//                      over T_model (OpBench's table: conv, gemm, attention, ...).
// A layer whose point is missing or measured nothing leaves the batch incomplete:
// its sums hold the layers that have times, and `missing` names the others.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"

namespace timeroof::roofline {

struct PointAnalysis;

struct ModelLayerResult {
  std::size_t layer = 0;             // into ModelAnalysis::layers
  std::optional<std::size_t> point;  // into RunRecord::points; nullopt: not measured
  std::string status;                // the point's status, or "not measured"
  // Per call.
  std::optional<double> time_s, graph_s, kernel_s, bound_s;
  std::optional<double> headroom;  // T / T_lb
  std::string class_label;         // classify.hpp's label, e.g. "memory_bound(dram)"
  // count x the per-call times.
  double total_s = 0, total_bound_s = 0, gap_s = 0;
};

struct OperatorTypeShare {
  std::string type;  // "gemm"
  double time_s = 0;
  double share = 0;  // of T_model
  std::int64_t layers = 0;
};

struct ModelBatch {
  std::int64_t batch = 0;
  std::vector<ModelLayerResult> layers;  // one per ModelAnalysis::layers, same order
  double time_s = 0;
  std::optional<double> graph_s, kernel_s;
  double bound_s = 0;
  std::optional<double> headroom;         // T_model / T_lb_model
  std::vector<std::size_t> gap_ranking;   // into layers, largest gap first (gap > 0 only)
  std::vector<OperatorTypeShare> shares;  // largest time first
  std::vector<std::string> missing;       // layers without a time
};

struct ModelLayerInfo {
  std::string name, family, type;
  std::int64_t count = 1;
  nlohmann::json params;  // as the table wrote them
};

struct ModelAnalysis {
  std::string name, title, source;
  std::vector<ModelLayerInfo> layers;
  std::vector<ModelBatch> batches;  // in the run's batch order
};

// The run's model (run.spec["model"]), or nullopt for a run without one. `points`:
// analysis.hpp's per-point analysis, one per RunRecord::points.
std::optional<ModelAnalysis> analyze_model(const RunRecord& record,
                                           const std::vector<PointAnalysis>& points);

// {"name", "title", "source", "layers": [{"name", "family", "type", "count",
//  "params"}], "batches": [{"batch", "time_s", "graph_s", "kernel_s",
//  "lower_bound_s", "headroom", "missing", "layers": [{"name", "status", "point",
//  "time_s", "graph_s", "kernel_s", "lower_bound_s", "headroom", "class",
//  "total_s", "total_lower_bound_s", "gap_s"}], "gap_layers": [{"name", "gap_s",
//  "share_of_gap"}], "shares": [{"type", "time_s", "share", "layers"}]}]};
// null where a value could not be formed.
nlohmann::json model_json(const ModelAnalysis& model);

}  // namespace timeroof::roofline
