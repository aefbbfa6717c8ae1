#include "src/cli/export_csv.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "core/format.hpp"
#include "src/cli/console.hpp"

namespace timeroof::cli {

namespace {

using roofline::PointAnalysis;
using roofline::PointBounds;

// One row, built column by column; the first row of a table sets its header and
// every later row must name the same columns in the same order.
class Row {
 public:
  void text(std::string_view name, std::string value) {
    names_.emplace_back(name);
    cells_.push_back(std::move(value));
  }
  void number(std::string_view name, const std::optional<double>& value) {
    text(name, data_number(value));
  }
  void integer(std::string_view name, const std::optional<std::int64_t>& value) {
    text(name, value ? std::to_string(*value) : std::string());
  }
  void boolean(std::string_view name, const std::optional<bool>& value) {
    text(name, value ? (*value ? "true" : "false") : "");
  }
  // A TimeStats as `prefix`_s (the median), its interval, statistics and samples.
  void stats(const std::string& prefix, const std::optional<TimeStats>& t) {
    number(prefix + "_s", t ? std::optional(t->median_s) : std::nullopt);
    number(prefix + "_ci_low_s", t ? t->ci_low_s : std::nullopt);
    number(prefix + "_ci_high_s", t ? t->ci_high_s : std::nullopt);
    number(prefix + "_mean_s", t ? t->mean_s : std::nullopt);
    number(prefix + "_min_s", t ? std::optional(t->min_s) : std::nullopt);
    number(prefix + "_max_s", t ? std::optional(t->max_s) : std::nullopt);
    number(prefix + "_spread", t ? std::optional(t->spread) : std::nullopt);
    integer(prefix + "_samples", t ? std::optional<std::int64_t>(t->samples) : std::nullopt);
    integer(prefix + "_calls_per_sample",
            t ? std::optional<std::int64_t>(t->calls_per_sample) : std::nullopt);
    boolean(prefix + "_converged", t ? std::optional(t->converged) : std::nullopt);
  }
  const std::vector<std::string>& names() const { return names_; }
  std::vector<std::string>& cells() { return cells_; }

 private:
  std::vector<std::string> names_;
  std::vector<std::string> cells_;
};

void add_row(CsvTable& table, Row row) {
  if (table.header.empty() && table.rows.empty())
    table.header = row.names();
  else if (row.names() != table.header)
    throw std::logic_error("CSV table " + table.name + ": a row's columns differ from the header");
  table.rows.push_back(std::move(row.cells()));
}

// The columns that name a row's run and GPU, first in every table.
void run_columns(Row& row, const Run& run, std::size_t position) {
  row.text("run_uuid", run.uuid);
  row.integer("run_id", run_number(run, position));
  row.text("gpu_name", run.machine.gpu.name);
  row.text("gpu_chip", run.machine.gpu.chip);
  row.text("gpu_uuid", run.machine.gpu.uuid);
}

void point_key_columns(Row& row, const Point& p) {
  row.text("sweep", p.sweep);
  row.integer("seq", p.seq);
  row.text("op", p.op);
  row.text("precision", p.precision);
}

// Every parameter name of any point, in param_keys order of first appearance.
std::vector<std::string> all_param_keys(const std::vector<RunRecord>& records) {
  std::vector<std::string> keys;
  for (const RunRecord& r : records)
    for (const Point& p : r.points)
      for (const std::string& k : param_keys(p.params))
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  return keys;
}

// A parameter's cell: numbers as numbers (integers without a fraction), text as it is.
std::string param_cell(const nlohmann::json& params, const std::string& key) {
  if (!params.is_object() || !params.contains(key)) return "";
  const nlohmann::json& v = params.at(key);
  if (v.is_number_integer()) return v.dump();
  if (v.is_number()) return data_number(v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return param_value_text(v);
}

// The model's columns of one point; every cell empty where it was not analysed.
void model_columns(Row& row, const Point& p, const PointAnalysis& pa) {
  const PointBounds* b = pa.analysed ? &pa.bounds : nullptr;
  const roofline::Classification* c = pa.analysed ? &pa.classification : nullptr;
  const roofline::Decomposition* d = c ? &c->parts : nullptr;
  const auto num = [&](std::string_view name, auto get) {
    row.number(name, b ? std::optional<double>(get(*b)) : std::nullopt);
  };
  const auto txt = [&](std::string_view name, auto get) {
    row.text(name, b ? std::string(get(*b)) : std::string());
  };
  const auto part = [&](std::string_view name, auto get) {
    row.number(name, d ? std::optional<double>(get(*d)) : std::nullopt);
  };

  txt("time_source", [](const PointBounds& x) { return roofline::to_string(x.time_source); });
  num("time_s", [](const PointBounds& x) { return x.time_s; });
  row.stats("call", b ? b->call : std::nullopt);
  row.stats("stream", b ? b->stream : std::nullopt);
  row.stats("graph", b ? b->graph : std::nullopt);
  row.stats("issue", b ? b->issue : std::nullopt);
  txt("graph_unavailable", [](const PointBounds& x) { return x.graph_unavailable; });
  num("kernel_s", [](const PointBounds& x) { return x.kernel_s; });
  num("kernel_low_s", [](const PointBounds& x) { return x.kernel_low_s; });
  num("kernel_high_s", [](const PointBounds& x) { return x.kernel_high_s; });
  num("kernel_busy_s", [](const PointBounds& x) { return x.kernel_busy_s; });
  row.integer("launches", b ? b->launches : std::nullopt);
  num("transfer_measured_s", [](const PointBounds& x) { return x.transfer_measured_s; });
  row.number("h2d_bytes", p.timing.h2d_bytes);
  row.number("d2h_bytes", p.timing.d2h_bytes);

  row.number("analytic_flop", p.flops);
  row.number("analytic_min_bytes", p.min_bytes);
  txt("work_source", [](const PointBounds& x) { return roofline::to_string(x.work_source); });
  txt("bytes_source", [](const PointBounds& x) { return roofline::to_string(x.bytes_source); });
  num("work_flop", [](const PointBounds& x) { return x.total_work; });
  for (PrecisionClass pc : kAllPrecisionClasses)
    num(std::string("work_") + to_string(pc) + "_flop",
        [pc](const PointBounds& x) { return x.work[static_cast<std::size_t>(pc)]; });
  for (Level l : kAllLevels) {
    const std::string level = to_string(l);
    const auto lb = [l](const PointBounds& x) -> const roofline::LevelBounds& {
      return x.level(l);
    };
    num(level + "_bytes", [lb](const PointBounds& x) { return lb(x).bytes; });
    num(level + "_intensity_flop_per_byte", [lb](const PointBounds& x) { return lb(x).intensity; });
    num(level + "_roof_bytes_per_s", [lb](const PointBounds& x) { return lb(x).bandwidth; });
    num(level + "_attainable_flop_per_s", [lb](const PointBounds& x) { return lb(x).attainable; });
    num("t_" + level + "_s", [lb](const PointBounds& x) { return lb(x).time_s; });
    row.boolean(level + "_used",
                b ? std::optional(!lb(*b).excluded && lb(*b).time_s.has_value()) : std::nullopt);
  }
  num("peak_effective_flop_per_s", [](const PointBounds& x) { return x.peak_effective; });
  num("achieved_flop_per_s", [](const PointBounds& x) { return x.achieved; });
  num("achieved_low_flop_per_s", [](const PointBounds& x) { return x.achieved_low; });
  num("achieved_high_flop_per_s", [](const PointBounds& x) { return x.achieved_high; });
  num("attainable_flop_per_s", [](const PointBounds& x) { return x.attainable; });

  num("t_roof_s", [](const PointBounds& x) { return x.t_roof; });
  num("t_kernel_roof_s", [](const PointBounds& x) { return x.t_kernel_roof; });
  num("t_compute_s", [](const PointBounds& x) { return x.t_compute; });
  num("t_cuda_s", [](const PointBounds& x) { return x.t_cuda; });
  num("t_tensor_s", [](const PointBounds& x) { return x.t_tensor; });
  num("t_launch_s", [](const PointBounds& x) { return x.t_launch; });
  num("t_xfer_s", [](const PointBounds& x) { return x.t_xfer; });
  txt("transfer_host", [](const PointBounds& x) { return to_string(x.transfer_host); });
  txt("limiting_roof", [](const PointBounds& x) { return x.limiting_roof; });
  row.text("bottleneck", c ? roofline::to_string(c->bottleneck) : "");
  row.text("class", c ? c->label() : "");
  row.text("class_rule", c ? roofline::to_string(c->rule) : "");
  row.text("class_reason", c ? c->reason : "");
  num("efficiency", [](const PointBounds& x) { return x.efficiency; });
  num("tensor_share", [](const PointBounds& x) { return x.tensor_share; });
  num("tensor_utilisation", [](const PointBounds& x) { return x.tensor_utilisation; });
  num("t_lower_bound_s", [](const PointBounds& x) { return x.t_lower_bound; });
  txt("lower_bound_scope",
      [](const PointBounds& x) { return roofline::to_string(x.lower_bound_scope); });
  num("headroom", [](const PointBounds& x) { return x.headroom; });
  num("kernel_headroom", [](const PointBounds& x) { return x.kernel_headroom; });

  row.boolean("separated", d ? std::optional(d->separated) : std::nullopt);
  part("host_overhead_s", [](const roofline::Decomposition& x) { return x.host_overhead_s; });
  part("device_gaps_s", [](const roofline::Decomposition& x) { return x.device_gaps_s; });
  part("transfer_s", [](const roofline::Decomposition& x) { return x.transfer_s; });
  part("within_roof_s", [](const roofline::Decomposition& x) { return x.within_roof_s; });
  part("lost_to_roof_s", [](const roofline::Decomposition& x) { return x.lost_to_roof_s; });
  part("kernel_overlap_s", [](const roofline::Decomposition& x) { return x.kernel_overlap_s; });
  part("not_explained_s", [](const roofline::Decomposition& x) { return x.not_explained_s; });
  part("call_premium_s", [](const roofline::Decomposition& x) { return x.call_premium_s; });
}

}  // namespace

std::string csv_text(const CsvTable& table) {
  std::ostringstream out;
  const auto line = [&out](const std::vector<std::string>& cells) {
    for (std::size_t c = 0; c < cells.size(); ++c) out << (c ? "," : "") << csv_field(cells[c]);
    out << "\n";
  };
  line(table.header);
  for (const std::vector<std::string>& row : table.rows) line(row);
  return out.str();
}

CsvTable points_table(const std::vector<RunRecord>& records,
                      const std::vector<roofline::RunAnalysis>& analyses) {
  CsvTable table{"points", {}, {}};
  const std::vector<std::string> keys = all_param_keys(records);
  const auto row_of = [&keys](const Run& run, std::size_t position, const Point& p,
                              const PointAnalysis& pa) {
    Row row;
    run_columns(row, run, position);
    point_key_columns(row, p);
    row.text("math_mode", p.math_mode);
    row.text("algorithm", p.algorithm);
    for (const std::string& k : keys) row.text("param_" + k, param_cell(p.params, k));
    row.text("status", to_string(p.status));
    row.text("reason", p.reason);
    model_columns(row, p, pa);
    return row;
  };
  for (std::size_t r = 0; r < records.size(); ++r)
    for (const PointAnalysis& pa : analyses[r].points)
      add_row(table, row_of(records[r].run, r + 1, records[r].points[pa.index], pa));
  if (table.rows.empty()) table.header = row_of({}, 1, {}, {}).names();
  return table;
}

CsvTable kernels_table(const std::vector<RunRecord>& records,
                       const std::vector<roofline::RunAnalysis>& analyses) {
  CsvTable table{"kernels", {}, {}};
  const auto row_of = [](const Run& run, std::size_t position, const Point& p, std::size_t k,
                         const KernelRecord& kernel, const roofline::KernelBound* kb) {
    Row row;
    run_columns(row, run, position);
    point_key_columns(row, p);
    row.integer("kernel_index", static_cast<std::int64_t>(k));
    row.text("kernel_name", kernel.name);
    const char* axes[] = {"x", "y", "z"};
    for (std::size_t i = 0; i < 3; ++i) row.integer(std::string("grid_") + axes[i], kernel.grid[i]);
    for (std::size_t i = 0; i < 3; ++i)
      row.integer(std::string("block_") + axes[i], kernel.block[i]);
    row.number("duration_s", kernel.duration_s);
    row.integer("counters", static_cast<std::int64_t>(kernel.metrics.size()));
    double work = 0;
    if (kb)
      for (double w : kb->work) work += w;
    row.number("work_flop", kb ? std::optional(work) : std::nullopt);
    row.number("t_compute_s", kb ? std::optional(kb->t_compute) : std::nullopt);
    for (Level l : kAllLevels) {
      const std::size_t i = static_cast<std::size_t>(l);
      row.number(std::string(to_string(l)) + "_bytes", kb ? kb->bytes[i] : std::nullopt);
      row.number(std::string("t_") + to_string(l) + "_s", kb ? kb->t_mem[i] : std::nullopt);
    }
    row.boolean("l1_excluded", kb ? std::optional(kb->l1_excluded) : std::nullopt);
    row.number("t_bound_s", kb ? std::optional(kb->t_bound) : std::nullopt);
    row.text("limiting", kb ? kb->limiting : "");
    return row;
  };
  for (std::size_t r = 0; r < records.size(); ++r) {
    for (const PointAnalysis& pa : analyses[r].points) {
      const Point& p = records[r].points[pa.index];
      // The model's per-kernel bounds, in the order of the kernels, where it formed them.
      const std::vector<roofline::KernelBound>& bounds = pa.bounds.kernel_bounds;
      for (std::size_t k = 0; k < p.kernels.size(); ++k)
        add_row(table, row_of(records[r].run, r + 1, p, k, p.kernels[k],
                              pa.analysed && k < bounds.size() ? &bounds[k] : nullptr));
    }
  }
  if (table.rows.empty()) table.header = row_of({}, 1, {}, 0, {}, nullptr).names();
  return table;
}

CsvTable kernel_counters_table(const std::vector<RunRecord>& records) {
  CsvTable table{"kernel_counters", {}, {}};
  const auto row_of = [](const Run& run, std::size_t position, const Point& p, std::size_t k,
                         const std::string& metric, double value) {
    // The long table names its point by key only (join kernels.csv for the rest):
    // ~50 counters per kernel, each of those columns would repeat 50 times.
    Row row;
    row.text("run_uuid", run.uuid);
    row.integer("run_id", run_number(run, position));
    row.text("sweep", p.sweep);
    row.integer("seq", p.seq);
    row.integer("kernel_index", static_cast<std::int64_t>(k));
    row.text("metric", metric);
    row.number("value", value);
    return row;
  };
  for (std::size_t r = 0; r < records.size(); ++r)
    for (const Point& p : records[r].points)
      for (std::size_t k = 0; k < p.kernels.size(); ++k)
        for (const auto& [metric, value] : p.kernels[k].metrics)
          add_row(table, row_of(records[r].run, r + 1, p, k, metric, value));
  if (table.rows.empty()) table.header = row_of({}, 1, {}, 0, "", 0).names();
  return table;
}

CsvTable profile_table(const std::vector<RunRecord>& records,
                       const std::vector<roofline::ProfileAnalysis>& analyses) {
  CsvTable table{"profile", {}, {}};
  // One subject's identity (repeated on each of its rows: tidy) and one quantity.
  struct Subject {
    const Run* run = nullptr;
    std::size_t position = 1;
    const char* kind = "";
    std::string name;
    std::optional<std::int64_t> process_id, thread_id;
    std::string label;  // the model's class, where judged
  };
  const auto row_of = [](const Subject& s, const std::string& quantity,
                         const std::optional<double>& value) {
    Row row;
    run_columns(row, s.run ? *s.run : Run{}, s.position);
    row.text("kind", s.kind);
    row.text("subject", s.name);
    row.integer("process_id", s.process_id);
    row.integer("thread_id", s.thread_id);
    row.text("class", s.label);
    row.text("quantity", quantity);
    row.number("value", value);
    return row;
  };
  const auto add = [&](const Subject& given, const roofline::NamedQuantities& traced,
                       const std::optional<roofline::KernelModel>& model) {
    Subject s = given;
    if (model && model->bounds.t_kernel_roof > 0) s.label = model->classification.label();
    for (const auto& [name, value] : traced) add_row(table, row_of(s, name, value));
    if (model)
      for (const auto& [name, value] : roofline::model_quantities(*model))
        add_row(table, row_of(s, name, value));
  };
  for (std::size_t r = 0; r < records.size(); ++r) {
    const roofline::ProfileAnalysis& a = analyses.at(r);
    const Subject base{.run = &records[r].run, .position = r + 1};
    for (const roofline::KernelSummary& k : a.kernels) {
      Subject s = base;
      s.kind = "kernel";
      s.name = k.name;
      add(s, roofline::kernel_quantities(k), k.model);
      // The user's own metrics (profile --metrics), by their CUPTI names.
      for (const auto& [metric, value] : k.metrics) add_row(table, row_of(s, metric, value));
    }
    for (const roofline::ThreadRanges& t : a.threads) {
      Subject s = base;
      s.kind = "range";
      s.process_id = t.process_id;
      s.thread_id = t.thread_id;
      const auto walk = [&](const auto& self, const roofline::RangeNode& n) -> void {
        s.name = n.path;
        add(s, roofline::range_quantities(n, a.api_tracing), n.model);
        for (const roofline::RangeNode& c : n.children) self(self, c);
      };
      for (const roofline::RangeNode& root : t.roots) walk(walk, root);
    }
    if (a.program) {
      Subject s = base;
      s.kind = "program";
      add(s, {}, a.program);
    }
  }
  if (table.rows.empty()) table.header = row_of(Subject{}, "", std::nullopt).names();
  return table;
}

CsvTable ceilings_table(const std::vector<RunRecord>& records) {
  CsvTable table{"ceilings", {}, {}};
  const auto row_of = [](const Run& run, std::size_t position, const Ceiling& c) {
    Row row;
    run_columns(row, run, position);
    row.text("name", c.name);
    row.text("kind", to_string(c.kind));
    row.text("unit", c.unit);
    row.number("measured", c.measured);
    row.number("theoretical", c.theoretical);
    row.text("theoretical_source", c.theoretical_source);
    row.text("method", c.method);
    row.integer("repeats", c.repeats);
    row.number("spread", c.spread);
    row.number("sm_clock_hz", c.sm_clock_hz);
    row.number("mem_clock_hz", c.mem_clock_hz);
    row.number("power_w", c.power.watts);
    row.number("power_limit_w", c.power.power_limit_w);
    row.number("max_temperature_c", c.power.max_temperature_c);
    std::string limits;
    for (const std::string& l : c.power.clock_limits) limits += (limits.empty() ? "" : " ") + l;
    row.text("clock_limits", limits);
    row.number("sustained_measured",
               c.sustained ? std::optional(c.sustained->measured) : std::nullopt);
    row.number("sustained_s", c.sustained ? std::optional(c.sustained->seconds) : std::nullopt);
    return row;
  };
  for (std::size_t r = 0; r < records.size(); ++r)
    for (const Ceiling& c : records[r].run.machine.ceilings)
      add_row(table, row_of(records[r].run, r + 1, c));
  if (table.rows.empty()) table.header = row_of({}, 1, {}).names();
  return table;
}

CsvTable model_layers_table(const std::vector<RunRecord>& records,
                            const std::vector<roofline::RunAnalysis>& analyses) {
  CsvTable table{"model_layers", {}, {}};
  using roofline::ModelBatch;
  using roofline::ModelLayerResult;
  const auto row_of = [](const Run& run, std::size_t position, const roofline::ModelAnalysis& m,
                         const ModelBatch& b, const ModelLayerResult& r) {
    Row row;
    run_columns(row, run, position);
    const roofline::ModelLayerInfo& info = m.layers.at(r.layer);
    row.text("model", m.name);
    row.integer("batch", b.batch);
    row.text("layer", info.name);
    row.text("family", info.family);
    row.text("type", info.type);
    row.integer("count", info.count);
    row.text("status", r.status);
    row.number("time_s", r.time_s);
    row.number("graph_s", r.graph_s);
    row.number("kernel_s", r.kernel_s);
    row.number("lower_bound_s", r.bound_s);
    row.number("headroom", r.headroom);
    row.text("class", r.class_label);
    row.number("total_s", r.time_s ? std::optional(r.total_s) : std::nullopt);
    row.number("total_lower_bound_s", r.bound_s ? std::optional(r.total_bound_s) : std::nullopt);
    row.number("gap_s", r.bound_s ? std::optional(r.gap_s) : std::nullopt);
    row.number("model_time_s", b.time_s);
    row.number("model_lower_bound_s", b.bound_s);
    row.number("model_headroom", b.headroom);
    return row;
  };
  for (std::size_t r = 0; r < records.size(); ++r) {
    if (!analyses[r].model) continue;
    const roofline::ModelAnalysis& m = *analyses[r].model;
    for (const ModelBatch& b : m.batches)
      for (const ModelLayerResult& layer : b.layers)
        add_row(table, row_of(records[r].run, r + 1, m, b, layer));
  }
  if (table.rows.empty()) table.header = row_of({}, 1, {.layers = {{}}}, {}, {}).names();
  return table;
}

std::vector<CsvTable> export_tables(const std::vector<RunRecord>& records,
                                    const std::vector<roofline::RunAnalysis>& analyses) {
  std::vector<CsvTable> tables = {points_table(records, analyses), kernels_table(records, analyses),
                                  kernel_counters_table(records), ceilings_table(records)};
  // model_layers.csv only where a run is a model run (`run --model`).
  if (std::any_of(analyses.begin(), analyses.end(), [](const auto& a) { return a.model; }))
    tables.push_back(model_layers_table(records, analyses));
  return tables;
}

}  // namespace timeroof::cli
