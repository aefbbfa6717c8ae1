// `timeroof run --model NAME` (src/cli/model_command.cpp): a model layer table
// (sweeps/model_table.hpp) measured as one run, and the model's console summary.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "roofline/model_analysis.hpp"
#include "src/cli/commands.hpp"
#include "sweeps/model_table.hpp"

namespace timeroof::cli {

struct ModelRequest {
  std::string model;    // a bundled table's name, or a table's path (.toml)
  std::string batches;  // --batch: a value list; empty: the table's batches
  std::map<std::string, std::string> overrides;  // --precision: axis -> value
  bool dry_run = false;
  bool counters = true;
  std::string resume;  // run id or uuid prefix
};

// Where the bundled tables are: $TIMEROOF_MODELS, else PREFIX/share/timeroof/models
// beside an installed binary, else the source tree's sweeps/models.
std::string models_dir();
// The table `name` (bundled) or at the path `name` (ending in .toml).
ModelTable load_model_table(const std::string& name);
// --batch's value list ("1,8,32", "1..64:x2"); empty text: none (the table's).
std::vector<std::int64_t> parse_batches(const std::string& text);

ExitCode run_model(const CommonOptions& options, const ModelRequest& request);

// The console summary of a model run: per batch T_model, T_graph and T_k sums,
// the Benanza bound and headroom; the time share per operator type; per batch the
// layers that explain most of the gap.
std::string format_model(const roofline::ModelAnalysis& model);

}  // namespace timeroof::cli
