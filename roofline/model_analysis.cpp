// The analysis of a model run (model_analysis.hpp).
#include "roofline/model_analysis.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "core/error.hpp"
#include "roofline/analysis.hpp"

namespace timeroof::roofline {

using nlohmann::json;

namespace {

json optional_json(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

// Adds count x value to `sum`; a missing value makes the sum unknown.
void add_scaled(std::optional<double>& sum, const std::optional<double>& value,
                std::int64_t count) {
  sum = sum && value ? std::optional<double>(*sum + static_cast<double>(count) * *value)
                     : std::nullopt;
}

}  // namespace

std::optional<ModelAnalysis> analyze_model(const RunRecord& record,
                                           const std::vector<PointAnalysis>& points) {
  const json& spec = record.run.spec;
  if (!spec.is_object() || !spec.contains("model") || !spec["model"].is_object())
    return std::nullopt;
  const json& layout = spec["model"];
  ModelAnalysis model;
  try {
    model.name = layout.at("name").get<std::string>();
    model.title = layout.value("title", std::string());
    model.source = layout.value("source", std::string());
    // (sweep, seq) -> index into the record's points.
    std::map<std::pair<std::string, int>, std::size_t> index;
    for (std::size_t i = 0; i < record.points.size(); ++i)
      index[{record.points[i].sweep, record.points[i].seq}] = i;
    const std::vector<std::int64_t> batches = layout.at("batches").get<std::vector<std::int64_t>>();
    for (const std::int64_t batch : batches) model.batches.push_back({.batch = batch});
    for (const json& layer : layout.at("layers")) {
      const std::size_t l = model.layers.size();
      model.layers.push_back(
          {layer.at("name").get<std::string>(), layer.at("family").get<std::string>(),
           layer.at("type").get<std::string>(), layer.at("count").get<std::int64_t>(),
           layer.value("params", json::object())});
      const std::int64_t count = model.layers.back().count;
      for (const json& where : layer.at("points")) {
        const std::int64_t batch = where.at("batch").get<std::int64_t>();
        const auto b = std::find_if(model.batches.begin(), model.batches.end(),
                                    [&](const ModelBatch& mb) { return mb.batch == batch; });
        if (b == model.batches.end()) continue;
        ModelLayerResult r;
        r.layer = l;
        r.status = "not measured";
        const auto found =
            index.find({where.at("sweep").get<std::string>(), where.at("seq").get<int>()});
        if (found != index.end()) {
          r.point = found->second;
          const Point& point = record.points[found->second];
          r.status = to_string(point.status);
          const PointAnalysis& pa = points.at(found->second);
          if (pa.analysed && pa.bounds.time_s) {
            r.time_s = pa.bounds.time_s;
            r.graph_s = pa.bounds.graph_s();
            r.kernel_s = pa.bounds.kernel_s;
            if (pa.bounds.t_lower_bound > 0) r.bound_s = pa.bounds.t_lower_bound;
            r.headroom = pa.bounds.headroom;
            r.class_label = pa.classification.label();
            r.total_s = static_cast<double>(count) * *r.time_s;
            r.total_bound_s = static_cast<double>(count) * r.bound_s.value_or(0);
            r.gap_s = r.bound_s ? r.total_s - r.total_bound_s : 0;
          }
        }
        b->layers.push_back(std::move(r));
      }
    }
  } catch (const json::exception& error) {
    throw usage_error("run " + std::to_string(record.run.id) +
                      ": its spec's model layout is malformed (" + error.what() +
                      "); it was not written by `timeroof run --model`");
  }
  for (ModelBatch& b : model.batches) {
    b.graph_s = 0.0;
    b.kernel_s = 0.0;
    std::map<std::string, OperatorTypeShare> shares;
    bool every_bound = true;
    for (const ModelLayerResult& r : b.layers) {
      const ModelLayerInfo& info = model.layers[r.layer];
      if (!r.time_s) {
        b.missing.push_back(info.name);
        b.graph_s = b.kernel_s = std::nullopt;
        continue;
      }
      b.time_s += r.total_s;
      b.bound_s += r.total_bound_s;
      every_bound = every_bound && r.bound_s.has_value();
      add_scaled(b.graph_s, r.graph_s, info.count);
      add_scaled(b.kernel_s, r.kernel_s, info.count);
      OperatorTypeShare& share = shares[info.type];
      share.type = info.type;
      share.time_s += r.total_s;
      ++share.layers;
    }
    if (b.bound_s > 0 && every_bound) b.headroom = b.time_s / b.bound_s;
    for (std::size_t i = 0; i < b.layers.size(); ++i)
      if (b.layers[i].gap_s > 0) b.gap_ranking.push_back(i);
    std::stable_sort(b.gap_ranking.begin(), b.gap_ranking.end(), [&](std::size_t x, std::size_t y) {
      return b.layers[x].gap_s > b.layers[y].gap_s;
    });
    for (auto& [type, share] : shares) {
      share.share = b.time_s > 0 ? share.time_s / b.time_s : 0;
      b.shares.push_back(share);
    }
    std::stable_sort(
        b.shares.begin(), b.shares.end(),
        [](const OperatorTypeShare& x, const OperatorTypeShare& y) { return x.time_s > y.time_s; });
  }
  return model;
}

json model_json(const ModelAnalysis& model) {
  json layers = json::array();
  for (const ModelLayerInfo& l : model.layers)
    layers.push_back({{"name", l.name},
                      {"family", l.family},
                      {"type", l.type},
                      {"count", l.count},
                      {"params", l.params}});
  json batches = json::array();
  for (const ModelBatch& b : model.batches) {
    json rows = json::array();
    for (const ModelLayerResult& r : b.layers)
      rows.push_back({{"name", model.layers[r.layer].name},
                      {"status", r.status},
                      {"point", r.point ? json(*r.point) : json(nullptr)},
                      {"time_s", optional_json(r.time_s)},
                      {"graph_s", optional_json(r.graph_s)},
                      {"kernel_s", optional_json(r.kernel_s)},
                      {"lower_bound_s", optional_json(r.bound_s)},
                      {"headroom", optional_json(r.headroom)},
                      {"class", r.class_label.empty() ? json(nullptr) : json(r.class_label)},
                      {"total_s", r.total_s},
                      {"total_lower_bound_s", r.total_bound_s},
                      {"gap_s", r.gap_s}});
    const double gap = b.time_s - b.bound_s;
    json gaps = json::array();
    for (const std::size_t i : b.gap_ranking)
      gaps.push_back({{"name", model.layers[b.layers[i].layer].name},
                      {"gap_s", b.layers[i].gap_s},
                      {"share_of_gap", gap > 0 ? json(b.layers[i].gap_s / gap) : json(nullptr)}});
    json shares = json::array();
    for (const OperatorTypeShare& s : b.shares)
      shares.push_back(
          {{"type", s.type}, {"time_s", s.time_s}, {"share", s.share}, {"layers", s.layers}});
    batches.push_back({{"batch", b.batch},
                       {"time_s", b.time_s},
                       {"graph_s", optional_json(b.graph_s)},
                       {"kernel_s", optional_json(b.kernel_s)},
                       {"lower_bound_s", b.bound_s},
                       {"headroom", optional_json(b.headroom)},
                       {"missing", b.missing},
                       {"layers", rows},
                       {"gap_layers", gaps},
                       {"shares", shares}});
  }
  return {{"name", model.name},
          {"title", model.title},
          {"source", model.source},
          {"layers", layers},
          {"batches", batches}};
}

}  // namespace timeroof::roofline
