// Model layer tables (sweeps/models/*.toml, issue 18): the distinct layers of a
// network, each a point of an operator family with its multiplicity, batch an axis.
// A table expands, for the batches asked for, into one sweep per family (its
// distinct points; two layers of one shape share a point) and the model's layout,
// which maps every layer and batch to its point, so the analysis of a model run
// needs nothing but the run (roofline/model_analysis.hpp).
//
// The file:
//   [model]            name, title, source (where the shapes come from: paper,
//   name = "bert_base" torchvision, the HF config), batches (the default batch
//   batches = [1, 8]   list), all required
//   [constants]        integers, or expressions of the constants above them
//   seq = 128
//   [defaults]         params every layer takes unless it sets them, each applied to
//   precision = "fp16" the layers whose family has that axis
//   [[layer]]          name (unique), family, count (>= 1), and the family's axes
//   name = "qkv"
//   family = "gemm"
//   count = 12
//   n = "batch*seq"    integer axes: integers or expressions; text axes: a value
// An expression: integers, the names `batch` and the constants, + - * / and
// parentheses; '/' must divide exactly. An axis a layer and [defaults] leave out
// takes the family's baseline. Every layer is validated through its family
// (find_family, problem()) for each batch, so a bad table fails as a one-line usage
// error naming the file, the layer and the fix before any GPU work.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/spec.hpp"

namespace timeroof {

struct ModelLayer {
  std::string name;    // "layer1.conv2", unique in the table
  std::string family;  // "conv2d"
  std::int64_t count = 1;
  // The params as written (integers, expression strings, text values), the
  // table's [defaults] included; axes left out take the family's baseline.
  nlohmann::json params = nlohmann::json::object();
};

struct ModelTable {
  std::string name;                                             // "resnet50"
  std::string title;                                            // one line
  std::string source;                                           // where the shapes come from
  std::vector<std::int64_t> batches;                            // the default batches
  std::vector<std::pair<std::string, std::int64_t>> constants;  // in file order
  std::vector<ModelLayer> layers;                               // in file order
  std::string path;                                             // the file read
  std::string text;  // its text, for the run's provenance
};

// OpBench's operator types: conv, gemm, attention, norm, pointwise, pool,
// softmax, lstm; a family without one is its own type.
std::string operator_type(const std::string& family);

// Evaluates an integer expression (above) with `names` bound; a usage error
// naming `where`, the expression and what is wrong (unknown name, division that
// is not exact or by zero, overflow, a syntax error).
std::int64_t evaluate_expression(const std::string& expression,
                                 const std::map<std::string, std::int64_t>& names,
                                 const std::string& where);

// Reads a table; every layer is checked against its family (`lookup`) at the
// table's default batches. Errors: "<path>: layer 'x' (#3): ..." and the fix.
ModelTable model_table_from_toml_text(const std::string& text, const std::string& path,
                                      const FamilyLookup& lookup);
ModelTable model_table_from_toml(const std::string& path, const FamilyLookup& lookup);
inline ModelTable model_table_from_toml(const std::string& path) {
  return model_table_from_toml(
      path, [](const std::string& name) -> const OperatorFamily& { return find_family(name); });
}

// What a model run measures: one sweep per family (named "<model>.<family>", in
// the order of the families' first layers, points ordered batch by batch) and the
// layout the run's spec records under "model":
//   {"name", "title", "source", "path", "text", "batches", "overrides",
//    "layers": [{"name", "family", "type", "count", "params" (as written),
//                "points": [{"batch", "sweep", "seq"}] (one per batch, in order)}]}
struct ModelPlan {
  std::vector<SweepSpec> sweeps;
  nlohmann::json layout;
};

// `batches` empty: the table's; `overrides`: axis -> value set on every layer
// whose family has that axis (e.g. precision), after the table's own params.
ModelPlan expand_model(const ModelTable& table, const std::vector<std::int64_t>& batches,
                       const std::map<std::string, std::string>& overrides,
                       const FamilyLookup& lookup);
inline ModelPlan expand_model(const ModelTable& table, const std::vector<std::int64_t>& batches,
                              const std::map<std::string, std::string>& overrides = {}) {
  return expand_model(
      table, batches, overrides,
      [](const std::string& name) -> const OperatorFamily& { return find_family(name); });
}

// The model tables in `dir` (*.toml) by name (the file's stem), sorted.
std::vector<std::string> model_names(const std::string& dir);
// The table `name` in `dir`: a usage error listing the models there when unknown.
std::string model_path(const std::string& dir, const std::string& name);

}  // namespace timeroof
