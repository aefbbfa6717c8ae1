// Fuzz targets value_list and toml_spec: the sweep spec parser (sweeps/spec.cpp, spec_toml.cpp)
// against a family of its own, shaped like conv2d's axes (integers with words,
// text values, an eng<N> pattern), whose problem range-checks as conv2d does.
// The parser is the same whichever family it reads for.
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "fuzz/entries.hpp"
#include "sweeps/family.hpp"
#include "sweeps/spec.hpp"

namespace timeroof::fuzz {
namespace {

using nlohmann::json;

class FakeProblem final : public Problem {
 public:
  explicit FakeProblem(json params) : params_(std::move(params)) {}
  std::string op() const override { return "fuzz_" + params_.value("direction", "fwd"); }
  json params() const override { return params_; }
  Precision precision() const override {
    return find_precision(params_.value("precision", "fp32")).value_or(Precision::fp32);
  }
  MathMode math_mode() const override { return MathMode::tensor; }
  double flops() const override { return 2.0 * params_.value("batch", 1.0); }
  double min_bytes() const override { return 4.0 * params_.value("batch", 1.0); }
  std::vector<TensorArgument> inputs() const override { return {{"x", 4}}; }
  std::vector<TensorArgument> outputs() const override {
    if (params_.value("direction", "fwd") == "bwd_filter") return {};
    return {{"y", 4}};
  }

 private:
  json params_;
};

void check_integer(const json& point, const char* key, std::int64_t low) {
  if (!point.contains(key)) throw usage_error(std::string("fuzz: no ") + key);
  const json& value = point.at(key);
  if (value.is_string()) return;  // a word the axis allows
  if (!value.is_number_integer()) throw usage_error(std::string("fuzz: ") + key + " not integer");
  const std::int64_t number = value.get<std::int64_t>();
  if (number < low || number > INT_MAX) throw usage_error(std::string("fuzz: ") + key + " range");
}

const OperatorFamily& family() {
  static const OperatorFamily family = [] {
    OperatorFamily f;
    f.name = "fuzzconv";
    f.help = "the fuzz targets' family";
    f.axes = {
        integer_axis("batch", "an integer", json::array({16, 1, 2, 4})),
        integer_axis("filter", "an integer", json::array({3, 7})),
        integer_axis("pad", "an integer", json::array({"same", 0}), {"same"}),
        text_axis("algorithm", "a word", {"heuristic", "exhaustive", "eng<N>"},
                  json::array({"heuristic"})),
        text_axis("direction", "a word", {"fwd", "bwd_data", "bwd_filter"}, json::array({"fwd"})),
        text_axis("precision", "a word", {"fp16", "fp32", "tf32", "bf16"}, json::array({"fp16"}))};
    f.default_points = [] { return std::vector<json>{}; };
    f.problem = [](const json& point) -> std::unique_ptr<Problem> {
      if (!point.is_object()) throw usage_error("fuzz: a point is an object");
      check_integer(point, "batch", 1);
      check_integer(point, "filter", 1);
      check_integer(point, "pad", 0);
      return std::make_unique<FakeProblem>(point);
    };
    return f;
  }();
  return family;
}

const OperatorFamily& lookup(const std::string& name) {
  if (name != family().name) throw usage_error("unknown family '" + name + "'; allowed: fuzzconv");
  return family();
}

}  // namespace

void value_list(std::string_view data) {
  try {
    const std::size_t newline = data.find('\n');
    const std::string_view head = data.substr(0, newline);
    const std::string_view rest =
        newline == std::string_view::npos ? std::string_view() : data.substr(newline + 1);
    if (head.find('=') == std::string_view::npos) {  // one axis: its key, then the list
      for (const ParamAxis& axis : family().axes)
        if (axis.key == head) (void)parse_value_list(axis, rest);
      return;
    }
    std::vector<std::pair<std::string, std::string>> flags;  // key=value lines
    std::size_t begin = 0;
    while (begin <= data.size()) {
      std::size_t end = data.find('\n', begin);
      if (end == std::string_view::npos) end = data.size();
      const std::string_view line = data.substr(begin, end - begin);
      const std::size_t equals = line.find('=');
      flags.emplace_back(
          std::string(line.substr(0, equals)),
          equals == std::string_view::npos ? std::string() : std::string(line.substr(equals + 1)));
      begin = end + 1;
    }
    (void)to_json(spec_from_flags(family(), flags)).dump();
  } catch (const Error&) {
    // A clean refusal.
  }
}

void toml_spec(std::string_view data) {
  try {
    const SweepSpec spec = spec_from_toml_text(std::string(data), "fuzz.toml", lookup);
    (void)to_json(spec).dump();
  } catch (const Error&) {
    // A clean refusal.
  }
}

}  // namespace timeroof::fuzz
