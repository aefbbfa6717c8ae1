// An operator family ("conv2d", "lstm"): the parameters a sweep may set, its
// default sweep, and how the host-only Problem of a point is built, which
// validates the point (it is valid when its problem can be built). The spec
// parser, `timeroof sweep` and the runner only talk to families, so a new
// operator (GEMM, attention) is one more family, not a change to the runner.
// Host only: the registry builds in the analysis-only configuration; the
// library implementation of a family's points is make_operator's
// (sweeps/implementations.hpp, CUDA builds).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweeps/problem.hpp"

namespace timeroof {

// One parameter a sweep may vary (a key of a point's params).
struct ParamAxis {
  enum class Kind { integer, text };
  std::string key;  // "batch", "channels", "filter", "precision", ...
  Kind kind = Kind::integer;
  std::string help;                  // one line, for --help and error messages
  std::vector<std::string> allowed;  // text axes: the allowed values
  nlohmann::json defaults;           // array: the default sweep's values for this axis
};

// An integer axis (`words`: the words it also takes, e.g. conv2d's pad = same),
// and a text axis of `allowed` values; `defaults` as ParamAxis::defaults.
ParamAxis integer_axis(std::string key, std::string help, nlohmann::json defaults,
                       std::vector<std::string> words = {});
ParamAxis text_axis(std::string key, std::string help, std::vector<std::string> allowed,
                    nlohmann::json defaults);

// Reading a point's params by its family's axes, for the families' spec_from_params;
// usage errors start with "<family>: " and name the key and what it allows.
// A point must be an object whose keys are all axes' keys.
void require_known_keys(const std::string& family, const nlohmann::json& point,
                        const std::vector<ParamAxis>& axes);
// The value of `axis` (its baseline, defaults[0], when the point has none) as an
// integer in [low, INT_MAX].
std::int64_t axis_integer(const std::string& family, const nlohmann::json& point,
                          const ParamAxis& axis, std::int64_t low);
// The value of a text axis: one of its allowed values, or a value one of its
// patterns matches (sweeps/spec.hpp; the problem validates the rest).
std::string axis_text(const std::string& family, const nlohmann::json& point,
                      const ParamAxis& axis);
// The axis of `key`; a logic error when there is none (a family's own bug).
const ParamAxis& axis_of(const std::string& family, const std::vector<ParamAxis>& axes,
                         const std::string& key);

struct OperatorFamily {
  std::string name;  // "conv2d"
  std::string help;  // one line
  std::vector<ParamAxis> axes;
  // The default sweep's points (each a complete params object), in run order.
  std::function<std::vector<nlohmann::json>()> default_points;
  // The problem of one point; an invalid point throws a usage error naming the
  // key and the allowed values.
  std::function<std::unique_ptr<Problem>(const nlohmann::json& point)> problem;
};

// The point's params with the algorithm a selection ("heuristic", "exhaustive")
// chose written in, so another process (the timing worker) or a later window
// runs the same plan. Unchanged where the family cannot name that algorithm in
// its params (the norms' algorithm is a selection only, heuristic or fastest):
// there the other process selects again and its choice is compared with this
// one. Pinning "eng1" into a norm point made every norm point fail in the worker
// and be timed in the runner, after CUPTI attached (the H200 sample of 506d72d).
nlohmann::json with_algorithm_pinned(const OperatorFamily& family, const nlohmann::json& params,
                                     const std::string& algorithm);

// Every family this build has, in a fixed order; find_family throws a usage
// error listing them when `name` is unknown.
const std::vector<OperatorFamily>& operator_families();
const OperatorFamily& find_family(const std::string& name);

// Implemented by each family's own file.
OperatorFamily conv2d_family();
OperatorFamily lstm_family();
OperatorFamily gemm_family();
OperatorFamily attention_family();
OperatorFamily pointwise_family();
OperatorFamily softmax_family();
OperatorFamily pool_family();
OperatorFamily layernorm_family();
OperatorFamily batchnorm_family();

}  // namespace timeroof
