// Model layer tables: the TOML reader, the integer expressions of their params,
// and the expansion into one sweep per family (model_table.hpp).
#include "sweeps/model_table.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <utility>

// Header-only, as in spec_toml.cpp: the device machine has no libtomlplusplus.so.
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include "core/error.hpp"
#include "sweeps/spec_parts.hpp"
#include "sweeps/toml_parts.hpp"

namespace timeroof {

using nlohmann::json;
using spec_detail::at;
using spec_detail::find_axis;
using spec_detail::join;
using spec_detail::lower;
using spec_detail::normalize_key;
using spec_detail::parse_toml;
using spec_detail::read_toml_file;

std::string operator_type(const std::string& family) {
  static const std::map<std::string, std::string> types = {
      {"conv2d", "conv"},    {"gemm", "gemm"},       {"attention", "attention"},
      {"layernorm", "norm"}, {"batchnorm", "norm"},  {"pointwise", "pointwise"},
      {"pool", "pool"},      {"softmax", "softmax"}, {"lstm", "lstm"}};
  const auto found = types.find(family);
  return found == types.end() ? family : found->second;
}

namespace {

// Recursive descent over  sum := product (('+'|'-') product)*,
// product := factor (('*'|'/') factor)*, factor := integer | name | '(' sum ')' | '-' factor.
class ExpressionParser {
 public:
  ExpressionParser(const std::string& text, const std::map<std::string, std::int64_t>& names,
                   const std::string& where)
      : text_(text), names_(names), where_(where) {}

  std::int64_t parse() {
    const std::int64_t value = sum();
    skip_spaces();
    if (at_ < text_.size()) fail("unexpected '" + std::string(1, text_[at_]) + "'");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    std::string known;
    for (const auto& [name, value] : names_) known += (known.empty() ? "" : ", ") + name;
    throw usage_error(where_ + ": the expression '" + text_ + "': " + what +
                      "; allowed: integers, " + known + ", + - * / (exact) and parentheses");
  }
  void skip_spaces() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool take(char c) {
    skip_spaces();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  // a op b, refused when it overflows.
  template <typename Op>
  std::int64_t checked(Op op, std::int64_t a, std::int64_t b) const {
    std::int64_t result = 0;
    if (op(a, b, &result)) fail("overflows a 64-bit integer");
    return result;
  }
  static bool add(std::int64_t a, std::int64_t b, std::int64_t* r) {
    return __builtin_add_overflow(a, b, r);
  }
  static bool subtract(std::int64_t a, std::int64_t b, std::int64_t* r) {
    return __builtin_sub_overflow(a, b, r);
  }
  static bool multiply(std::int64_t a, std::int64_t b, std::int64_t* r) {
    return __builtin_mul_overflow(a, b, r);
  }
  std::int64_t sum() {
    std::int64_t value = product();
    for (;;) {
      if (take('+')) {
        value = checked(add, value, product());
      } else if (take('-')) {
        value = checked(subtract, value, product());
      } else {
        return value;
      }
    }
  }
  std::int64_t product() {
    std::int64_t value = factor();
    for (;;) {
      if (take('*')) {
        value = checked(multiply, value, factor());
      } else if (take('/')) {
        const std::int64_t right = factor();
        if (right == 0) fail("division by zero");
        if (value % right != 0)
          fail(std::to_string(value) + " / " + std::to_string(right) + " is not exact");
        if (value == INT64_MIN && right == -1) fail("overflows a 64-bit integer");
        value /= right;
      } else {
        return value;
      }
    }
  }
  std::int64_t factor() {
    if (++depth_ > 64) fail("nested too deeply");
    skip_spaces();
    std::int64_t value = 0;
    if (take('(')) {
      value = sum();
      if (!take(')')) fail("a '(' is not closed");
    } else if (take('-')) {
      value = checked(subtract, 0, factor());
    } else if (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
      while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
        const int digit = text_[at_++] - '0';
        value = checked(add, checked(multiply, value, 10), digit);
      }
    } else if (at_ < text_.size() &&
               (std::isalpha(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) {
      const std::size_t start = at_;
      while (at_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_'))
        ++at_;
      const std::string name = text_.substr(start, at_ - start);
      const auto found = names_.find(name);
      if (found == names_.end()) fail("unknown name '" + name + "'");
      value = found->second;
    } else {
      fail(at_ < text_.size() ? "unexpected '" + std::string(1, text_[at_]) + "'"
                              : "it ends where a value is expected");
    }
    --depth_;
    return value;
  }

  const std::string& text_;
  const std::map<std::string, std::int64_t>& names_;
  const std::string& where_;
  std::size_t at_ = 0;
  int depth_ = 0;
};

// A param's value as the table wrote it: an integer or a string.
json param_value(const toml::node& node, const std::string& where) {
  if (const auto* integer = node.as_integer()) return integer->get();
  if (const auto* string = node.as_string()) return string->get();
  throw usage_error(where +
                    "is not an integer or a string; allowed: an integer, an "
                    "expression string such as \"batch*128\", or a text value");
}

std::int64_t positive_integer(const toml::node& node, const std::string& where,
                              const std::string& what) {
  const auto* integer = node.as_integer();
  if (!integer || integer->get() < 1)
    throw usage_error(where + what + " is " +
                      (integer ? std::to_string(integer->get()) : std::string("not an integer")) +
                      "; allowed: an integer >= 1");
  return integer->get();
}

// One param of a layer at one batch -> the point's value: integer axes take an
// integer, one of their words, or an expression; text axes one of their values.
json resolve_param(const ParamAxis& axis, const json& value,
                   const std::map<std::string, std::int64_t>& names, const std::string& where) {
  if (axis.kind == ParamAxis::Kind::integer) {
    if (value.is_number_integer()) return value;
    const std::string text = value.get<std::string>();
    for (const std::string& word : axis.allowed)
      if (lower(text) == lower(word)) return word;
    return evaluate_expression(text, names, where);
  }
  if (!value.is_string())
    throw usage_error(where + ": " + value.dump() + " is not text; allowed: " + join(axis.allowed));
  const std::string text = value.get<std::string>();
  if (text.find(',') != std::string::npos || text.find("..") != std::string::npos)
    throw usage_error(where + ": '" + text +
                      "' is a list; a layer takes one value; allowed: " + join(axis.allowed));
  return parse_value_list(axis, text, where).at(0);
}

}  // namespace

std::int64_t evaluate_expression(const std::string& expression,
                                 const std::map<std::string, std::int64_t>& names,
                                 const std::string& where) {
  return ExpressionParser(expression, names, where).parse();
}

ModelTable model_table_from_toml(const std::string& path, const FamilyLookup& lookup) {
  return model_table_from_toml_text(read_toml_file(path, "model table"), path, lookup);
}

ModelTable model_table_from_toml_text(const std::string& text, const std::string& path,
                                      const FamilyLookup& lookup) {
  const toml::table root = parse_toml(text, path);
  ModelTable table;
  table.path = path;
  table.text = text;
  const toml::table* model = nullptr;
  const toml::table* constants = nullptr;
  const toml::table* defaults = nullptr;
  const toml::array* layers = nullptr;
  for (const auto& [key, node] : root) {
    if (key == "model" && node.is_table())
      model = node.as_table();
    else if (key == "constants" && node.is_table())
      constants = node.as_table();
    else if (key == "defaults" && node.is_table())
      defaults = node.as_table();
    else if (key == "layer" && node.is_array_of_tables())
      layers = node.as_array();
    else
      throw usage_error(at(path, key.source()) + "unexpected '" + std::string(key.str()) +
                        "'; allowed: [model], [constants], [defaults] tables and [[layer]] "
                        "tables");
  }
  if (!model)
    throw usage_error(path +
                      ": no [model] table; allowed: [model] with name, title, source "
                      "and batches");
  std::set<std::string> model_keys;
  for (const auto& [key, node] : *model) {
    const std::string where = at(path, key.source()) + "[model] " + std::string(key.str());
    model_keys.insert(std::string(key.str()));
    if (key == "name" || key == "title" || key == "source") {
      if (!node.is_string() || node.as_string()->get().empty())
        throw usage_error(where + " must be a non-empty string");
      (key == "name"    ? table.name
       : key == "title" ? table.title
                        : table.source) = node.as_string()->get();
    } else if (key == "batches") {
      const toml::array* list = node.as_array();
      if (!list || list->empty())
        throw usage_error(where + " must be a non-empty list of integers >= 1, e.g. [1, 8, 32]");
      for (const toml::node& item : *list)
        table.batches.push_back(positive_integer(item, at(path, item.source()), "a batch"));
    } else {
      throw usage_error(where + ": unknown key; allowed: name, title, source, batches");
    }
  }
  for (const char* required : {"name", "title", "source", "batches"})
    if (!model_keys.count(required))
      throw usage_error(at(path, model->source()) + "[model] has no " + required +
                        "; allowed: name, title, source (where the shapes come from), batches");

  std::map<std::string, std::int64_t> names;  // the constants, then batch
  if (constants) {
    for (const auto& [key, node] : *constants) {
      const std::string name(key.str());
      const std::string where = at(path, key.source()) + "[constants] " + name;
      if (name == "batch")
        throw usage_error(where + ": 'batch' is the batch axis; name the constant otherwise");
      std::int64_t value = 0;
      if (const auto* integer = node.as_integer())
        value = integer->get();
      else if (const auto* string = node.as_string())
        value = evaluate_expression(string->get(), names, where);
      else
        throw usage_error(where + ": allowed: an integer or an expression of earlier constants");
      names[name] = value;
      table.constants.emplace_back(name, value);
    }
  }

  std::map<std::string, json> default_params;
  std::vector<std::string> default_where;
  if (defaults)
    for (const auto& [key, node] : *defaults) {
      const std::string where = at(path, key.source()) + "[defaults] " + std::string(key.str());
      default_params[normalize_key(key.str())] = param_value(node, where + " ");
    }

  if (!layers || layers->empty())
    throw usage_error(path +
                      ": no [[layer]] tables; allowed: [[layer]] with name, family, "
                      "count and the family's axes");
  std::set<std::string> layer_names;
  std::set<std::string> defaults_used;
  int index = 0;
  for (const toml::node& node : *layers) {
    const toml::table& block = *node.as_table();
    ++index;
    ModelLayer layer;
    const toml::node* family_node = block.get("family");
    const toml::node* name_node = block.get("name");
    if (!name_node || !name_node->is_string() || name_node->as_string()->get().empty())
      throw usage_error(at(path, block.source()) + "[[layer]] #" + std::to_string(index) +
                        " has no name; allowed: name = \"...\" (unique in the table)");
    layer.name = name_node->as_string()->get();
    const std::string where =
        at(path, block.source()) + "layer '" + layer.name + "' (#" + std::to_string(index) + ")";
    if (!layer_names.insert(layer.name).second)
      throw usage_error(where +
                        ": the name is used twice; each distinct layer once, with its "
                        "count");
    if (!family_node || !family_node->is_string())
      throw usage_error(where + ": no family; allowed: family = \"conv2d\" (or another family)");
    const OperatorFamily* family = nullptr;
    try {
      family = &lookup(family_node->as_string()->get());
    } catch (const Error& error) {
      throw usage_error(where + ": " + error.what());
    }
    layer.family = family->name;
    bool counted = false;
    for (const auto& [raw_key, value] : block) {
      const std::string key = normalize_key(raw_key.str());
      if (key == "name" || key == "family") continue;
      const std::string key_where = where + " " + key + ": ";
      if (key == "count") {  // an integer, or an expression of the constants
        layer.count = value.is_string()
                          ? evaluate_expression(value.as_string()->get(), names, where + " count")
                          : positive_integer(value, where + ": ", "count");
        if (layer.count < 1)
          throw usage_error(where + ": count is " + std::to_string(layer.count) +
                            "; allowed: >= 1 (how many times the layer runs per forward)");
        counted = true;
        continue;
      }
      if (!find_axis(*family, key))
        throw usage_error(where + ": unknown key '" + std::string(raw_key.str()) + "' for " +
                          family->name + "; allowed: name, family, count, " +
                          join(spec_detail::axis_keys(*family)));
      if (layer.params.contains(key))
        throw usage_error(where + ": " + key +
                          " is given twice (dashes and underscores are the "
                          "same)");
      layer.params[key] = param_value(value, key_where);
    }
    if (!counted)
      throw usage_error(where +
                        ": no count; allowed: count = N (how many times the layer runs "
                        "per forward, >= 1)");
    for (const auto& [key, value] : default_params)
      if (find_axis(*family, key)) {
        defaults_used.insert(key);
        if (!layer.params.contains(key)) layer.params[key] = value;
      }
    table.layers.push_back(std::move(layer));
  }
  for (const auto& [key, value] : default_params)
    if (!defaults_used.count(key))
      throw usage_error(path + ": [defaults] " + key +
                        " is an axis of none of the table's layers' families; remove it");
  // Every layer at every default batch, through its family.
  (void)expand_model(table, {}, {}, lookup);
  return table;
}

ModelPlan expand_model(const ModelTable& table, const std::vector<std::int64_t>& wanted,
                       const std::map<std::string, std::string>& overrides,
                       const FamilyLookup& lookup) {
  const std::vector<std::int64_t>& batches = wanted.empty() ? table.batches : wanted;
  std::map<std::string, std::int64_t> names(table.constants.begin(), table.constants.end());
  // Each family's distinct points, in first-use order, and the families' order.
  struct FamilyPoints {
    const OperatorFamily* family = nullptr;
    std::vector<json> points;
    std::map<std::string, int> seqs;
  };
  std::vector<std::string> order;
  std::map<std::string, FamilyPoints> families;
  for (const auto& [key, value] : overrides) {
    bool applies = false;
    for (const ModelLayer& layer : table.layers)
      applies = applies || find_axis(lookup(layer.family), normalize_key(key)) != nullptr;
    if (!applies) throw usage_error("--" + key + ": no layer of " + table.name + " has that axis");
  }
  json layers = json::array();
  for (const ModelLayer& layer : table.layers) {
    const OperatorFamily& family = lookup(layer.family);
    if (!families.count(family.name)) {
      order.push_back(family.name);
      families[family.name].family = &family;
    }
    layers.push_back({{"name", layer.name},
                      {"family", family.name},
                      {"type", operator_type(family.name)},
                      {"count", layer.count},
                      {"params", layer.params},
                      {"points", json::array()}});
  }
  for (const std::int64_t batch : batches) {
    if (batch < 1) throw usage_error("--batch: " + std::to_string(batch) + " is below 1");
    names["batch"] = batch;
    for (std::size_t i = 0; i < table.layers.size(); ++i) {
      const ModelLayer& layer = table.layers[i];
      FamilyPoints& slot = families.at(layer.family);
      const OperatorFamily& family = *slot.family;
      const std::string where =
          table.path + ": layer '" + layer.name + "' at batch " + std::to_string(batch);
      json point = baseline_point(family);
      for (const auto& [key, value] : layer.params.items())
        point[key] = resolve_param(*find_axis(family, key), value, names, where + ", " + key);
      for (const auto& [raw_key, value] : overrides) {
        const std::string key = normalize_key(raw_key);
        if (const ParamAxis* axis = find_axis(family, key))
          point[key] = resolve_param(*axis, value, names, "--" + raw_key);
      }
      try {
        (void)family.problem(point);
      } catch (const Error& error) {
        throw usage_error(where + ": " + error.what());
      }
      const std::string key = point.dump();
      auto found = slot.seqs.find(key);
      if (found == slot.seqs.end()) {
        found = slot.seqs.emplace(key, static_cast<int>(slot.points.size())).first;
        slot.points.push_back(point);
      }
      layers[i]["points"].push_back(
          {{"batch", batch}, {"sweep", table.name + "-" + family.name}, {"seq", found->second}});
    }
  }
  ModelPlan plan;
  for (const std::string& name : order) {
    SweepSpec spec;
    spec.name = table.name + "-" + name;
    spec.family = name;
    spec.points = std::move(families.at(name).points);
    spec.source = {{"kind", "model"}, {"model", table.name}, {"path", table.path}};
    plan.sweeps.push_back(std::move(spec));
  }
  json given_overrides = json::object();
  for (const auto& [key, value] : overrides) given_overrides[normalize_key(key)] = value;
  plan.layout = {{"name", table.name},           {"title", table.title},
                 {"source", table.source},       {"path", table.path},
                 {"text", table.text},           {"batches", batches},
                 {"overrides", given_overrides}, {"layers", std::move(layers)}};
  return plan;
}

std::vector<std::string> model_names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error))
    if (entry.path().extension() == ".toml") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string model_path(const std::string& dir, const std::string& name) {
  const std::vector<std::string> names = model_names(dir);
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw usage_error("--model: unknown model '" + name +
                      "'; models: " + (names.empty() ? "none in " + dir : join(names)) +
                      " (or a table's path ending in .toml)");
  return (std::filesystem::path(dir) / (name + ".toml")).string();
}

}  // namespace timeroof
