// `timeroof run --model NAME`: a model layer table (sweeps/model_table.hpp) measured
// as one run: one sweep per family of its layers, the model's layout in the run's
// spec, the roofs of the same GPU adopted from the store (measured first when the
// store has none: the whole-model bound needs them), then the model's summary.
// --dry-run lists the layers, the points and the expected time; --resume continues
// an interrupted model run with the same table, batches and overrides.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "roofline/analysis.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/console.hpp"
#include "src/cli/gpu_backend.hpp"
#include "src/cli/model_run.hpp"
#include "src/cli/stored_runs.hpp"
#include "src/cli/sweep_backend.hpp"
#include "src/store/results_store.hpp"
#include "sweeps/model_table.hpp"

namespace timeroof::cli {

std::string models_dir() {
  if (const char* given = std::getenv("TIMEROOF_MODELS")) return given;
  return installed_data("models", TIMEROOF_MODELS_DIR);
}

ModelTable load_model_table(const std::string& name) {
  const bool file = name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0;
  return model_table_from_toml(file ? name : model_path(models_dir(), name));
}

std::vector<std::int64_t> parse_batches(const std::string& text) {
  if (text.empty()) return {};
  const ParamAxis axis = integer_axis("batch", "the model's batch", nlohmann::json::array({1}));
  std::vector<std::int64_t> batches;
  for (const nlohmann::json& value : parse_value_list(axis, text, "--batch"))
    batches.push_back(value.get<std::int64_t>());
  return batches;
}

namespace {

// The layers and, per batch, the point each runs (seq in its family's sweep).
std::string describe_layers(const nlohmann::json& layout) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"layer", "family", "count"};
  for (const nlohmann::json& batch : layout.at("batches"))
    header.push_back("b=" + std::to_string(batch.get<std::int64_t>()));
  rows.push_back(header);
  for (const nlohmann::json& layer : layout.at("layers")) {
    std::vector<std::string> row = {layer.at("name").get<std::string>(),
                                    layer.at("family").get<std::string>(),
                                    std::to_string(layer.at("count").get<std::int64_t>())};
    for (const nlohmann::json& where : layer.at("points"))
      row.push_back("#" + std::to_string(where.at("seq").get<int>()));
    rows.push_back(row);
  }
  return text_table(rows, {}, true);
}

ExitCode dry_run(const CommonOptions& options, const ModelPlan& plan, bool counters) {
  std::optional<Machine> measured;
  std::error_code error;
  if (std::filesystem::exists(options.db, error)) {
    ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_only);
    for (const Run& run : store.list_runs())
      if (!run.machine.ceilings.empty()) measured = run.machine;
  }
  double total_s = 0;
  std::size_t points = 0;
  nlohmann::json sweeps = nlohmann::json::array();
  std::string text;
  for (const SweepSpec& spec : plan.sweeps) {
    SweepRequest request;
    request.spec = spec;
    request.counters = counters;
    const nlohmann::json listing = describe_sweep_json(request, measured ? &*measured : nullptr);
    total_s += listing.at("estimated_s").get<double>();
    points += spec.points.size();
    sweeps.push_back(listing);
    if (!options.json) text += "\n" + describe_sweep(request, measured ? &*measured : nullptr);
  }
  nlohmann::json layout = plan.layout;
  layout.erase("text");
  if (options.json) {
    print_json({{"model", layout},
                {"sweeps", sweeps},
                {"point_count", points},
                {"estimated_s", total_s},
                {"roofs", measured ? "measured" : "default"}});
    return ExitCode::ok;
  }
  std::cout << "model " << layout.at("name").get<std::string>() << ": "
            << layout.at("title").get<std::string>() << "\n"
            << "shapes: " << layout.at("source").get<std::string>() << "\n"
            << layout.at("layers").size() << " layer(s), " << points << " distinct point(s) in "
            << plan.sweeps.size() << " sweep(s); the roofs of this GPU come from the store, or "
            << "are measured first when it has none (not in this estimate)\n\n"
            << describe_layers(layout) << text << "\nmodel total: " << format_time(total_s)
            << " expected for " << points << " point(s)\n";
  return ExitCode::ok;
}

// A resumed model run must hold this very model (table, batches, overrides).
void check_resumed_model(const Run& run, const nlohmann::json& layout) {
  const nlohmann::json& stored = run.spec.value("model", nlohmann::json());
  const auto same = [&](const char* key) {
    return stored.is_object() && stored.value(key, nlohmann::json()) == layout.at(key);
  };
  if (!same("name") || !same("batches") || !same("overrides") || !same("layers"))
    throw usage_error("--resume " + std::to_string(run.id) + ": run " + std::to_string(run.id) +
                      " is not this model run (" +
                      (stored.is_object() ? "model " + stored.value("name", std::string("?")) +
                                                " with other batches, overrides or layers"
                                          : std::string("no model")) +
                      "); resume it with the command that started it: " + run.command_line);
}

}  // namespace

ExitCode run_model(const CommonOptions& options, const ModelRequest& request) {
  const ModelTable table = load_model_table(request.model);
  const ModelPlan plan = expand_model(table, parse_batches(request.batches), request.overrides);
  if (request.dry_run) return dry_run(options, plan, request.counters);
  const GpuAvailability gpus = find_gpus();
  if (gpus.count == 0) throw environment_error("no GPU: " + gpus.why_none);
  ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_write);
  Run run;
  if (request.resume.empty()) {
    run = new_run(options.command_line);
    run.machine.gpu = inspect_gpu(options.device);
    run.spec["model"] = plan.layout;
    run.spec["sweeps"] = nlohmann::json::array();
    for (const SweepSpec& spec : plan.sweeps) run.spec["sweeps"].push_back(to_json(spec));
    store.begin_run(run);
    adopt_roofs_of_the_same_gpu(store, run);
  } else {
    std::optional<RunRecord> record = store.load_run(request.resume);
    if (!record)
      throw usage_error("--resume " + request.resume + ": no such run in " + options.db +
                        "; list the runs with `timeroof runs`");
    run = record->run;
    check_resumed_model(run, plan.layout);
    if (run.status == to_string(RunStatus::complete))
      throw usage_error("--resume " + request.resume + ": run " + std::to_string(run.id) +
                        " is complete; nothing to resume (start a new run without --resume)");
    if (inspect_gpu(options.device).uuid != run.machine.gpu.uuid)
      throw usage_error("--resume " + request.resume + ": that run measured " +
                        run.machine.gpu.name + " " + run.machine.gpu.uuid +
                        "; resume on the same GPU (--device)");
    store.claim_run(run);
  }
  bool partial = false;
  failed_on_throw(store, {&run, 1}, [&] {
    if (run.machine.ceilings.empty()) {  // the whole-model bound needs this GPU's roofs
      std::cerr << "timeroof: measuring this GPU's roofs first (the model's bound needs them)\n";
      CeilingOptions ceilings;
      ceilings.sustained_seconds = 0;
      measure_machine(run.machine, ceilings);
      store.update_run(run);
      store.set_machine_measurements(run.id, run.machine);
    }
    for (const SweepSpec& spec : plan.sweeps) {
      SweepRequest sweep;
      sweep.spec = spec;
      sweep.counters = request.counters;
      sweep.resume = true;  // recorded above (or by the run resumed)
      partial =
          measure_sweep(sweep, store, run, isatty(STDERR_FILENO)) == ExitCode::partial || partial;
    }
  });
  finish_run(store, run, partial ? RunStatus::partial : RunStatus::complete);
  const RunRecord record = *store.load_run(std::to_string(run.id));
  if (options.json) {
    print_json(roofline::analysis_document({record}));
  } else {
    const roofline::RunAnalysis analysis = roofline::analyze(record);
    if (analysis.model) std::cout << format_model(*analysis.model);
    std::cout << "stored as run " << run.id << " in " << options.db
              << "; the report: timeroof report " << run.id << "\n";
  }
  return partial ? ExitCode::partial : ExitCode::ok;
}

}  // namespace timeroof::cli

namespace timeroof::cli {

namespace {

std::string percent(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * share);
  return text;
}

std::string optional_time(const std::optional<double>& seconds) {
  return seconds ? format_time(*seconds) : "-";
}

}  // namespace

std::string format_model(const roofline::ModelAnalysis& model) {
  std::string out = "model " + model.name + ": " + model.title + "\n";
  std::vector<std::vector<std::string>> summary = {
      {"batch", "T_model", "T_graph sum", "T_k sum", "T_lb (Benanza)", "headroom", "missing"}};
  for (const roofline::ModelBatch& b : model.batches) {
    char headroom[32] = "-";
    if (b.headroom) std::snprintf(headroom, sizeof headroom, "%.2fx", *b.headroom);
    summary.push_back({std::to_string(b.batch), format_time(b.time_s), optional_time(b.graph_s),
                       optional_time(b.kernel_s), b.bound_s > 0 ? format_time(b.bound_s) : "-",
                       headroom, std::to_string(b.missing.size())});
  }
  out += text_table(summary, {true, true, true, true, true, true, true}, true);
  // OpBench's table: the share of T_model per operator type, one column per batch.
  std::vector<std::string> types;
  for (const roofline::ModelLayerInfo& layer : model.layers)
    if (std::find(types.begin(), types.end(), layer.type) == types.end())
      types.push_back(layer.type);
  std::vector<std::vector<std::string>> shares = {{"operator type"}};
  for (const roofline::ModelBatch& b : model.batches)
    shares[0].push_back("b=" + std::to_string(b.batch));
  for (const std::string& type : types) {
    std::vector<std::string> row = {type};
    for (const roofline::ModelBatch& b : model.batches) {
      const auto found = std::find_if(b.shares.begin(), b.shares.end(),
                                      [&](const auto& s) { return s.type == type; });
      row.push_back(found == b.shares.end() ? "-" : percent(found->share));
    }
    shares.push_back(row);
  }
  out += "\ntime share per operator type:\n" +
         text_table(shares, std::vector<bool>(shares[0].size(), true), true);
  for (const roofline::ModelBatch& b : model.batches) {
    if (b.gap_ranking.empty()) continue;
    const double gap = b.time_s - b.bound_s;
    std::vector<std::vector<std::string>> rows = {
        {"layer", "count", "class", "count x (T - T_lb)", "of the gap"}};
    for (std::size_t i = 0; i < b.gap_ranking.size() && i < 5; ++i) {
      const roofline::ModelLayerResult& r = b.layers[b.gap_ranking[i]];
      const roofline::ModelLayerInfo& info = model.layers[r.layer];
      rows.push_back({info.name, std::to_string(info.count), r.class_label, format_time(r.gap_s),
                      gap > 0 ? percent(r.gap_s / gap) : "-"});
    }
    out += "\nbatch " + std::to_string(b.batch) + ": the layers that explain most of the gap (" +
           format_time(gap) + "):\n" + text_table(rows, {false, true, false, true, true}, true);
  }
  for (const roofline::ModelBatch& b : model.batches)
    if (!b.missing.empty())
      out += "batch " + std::to_string(b.batch) + ": no time for " +
             std::to_string(b.missing.size()) +
             " layer(s), left out of the sums: " + b.missing.front() +
             (b.missing.size() > 1 ? ", ..." : "") + "\n";
  return out;
}

}  // namespace timeroof::cli
