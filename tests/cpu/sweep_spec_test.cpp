// CPU tier, sweep specs without a GPU: the value-list syntax (lists, geometric and
// arithmetic ranges), every error naming the key and the allowed values, the
// Cartesian order (batch fastest), flags and TOML files (axes, explicit points,
// unknown keys with line numbers, malformed TOML), the conv2d family's default grid,
// the dry-run table and estimate, and the JSON form (numbers stay numbers).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "core/error.hpp"
#include "sweeps/conv2d_problem.hpp"
#include "sweeps/family.hpp"
#include "sweeps/spec.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof {
namespace {

using test::usage_message;

using nlohmann::json;
using Flags = std::vector<std::pair<std::string, std::string>>;

const OperatorFamily& conv() {
  static const OperatorFamily family = conv2d_family();
  return family;
}

// Stands in for find_family (sweeps/families.cpp) in these tests.
const OperatorFamily& lookup(const std::string& name) {
  if (name == "conv2d") return conv();
  throw usage_error("unknown operator family '" + name + "'; allowed: conv2d");
}

const ParamAxis& axis_of(const OperatorFamily& family, const std::string& key) {
  for (const ParamAxis& axis : family.axes)
    if (axis.key == key) return axis;
  throw std::logic_error("no axis " + key);
}

std::vector<json> values(const std::string& key, const std::string& text) {
  return parse_value_list(axis_of(conv(), key), text);
}

std::string value_error(const std::string& key, const std::string& text) {
  return usage_message([&] { parse_value_list(axis_of(conv(), key), text); });
}

std::vector<json> ints(std::initializer_list<std::int64_t> list) {
  std::vector<json> out;
  for (std::int64_t v : list) out.emplace_back(v);
  return out;
}

// A temporary TOML file, removed at the end of the test.
class TempToml {
 public:
  TempToml(const std::string& stem, const std::string& text)
      : path_(std::filesystem::temp_directory_path() /
              (stem + "-" + std::to_string(::getpid()) + ".toml")) {
    std::ofstream(path_) << text;
  }
  ~TempToml() { std::filesystem::remove(path_); }
  TempToml(const TempToml&) = delete;
  TempToml& operator=(const TempToml&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::string toml_error(const std::string& text) {
  const TempToml file("bad-spec", text);
  std::string message = usage_message([&] { spec_from_toml(file.path(), lookup); });
  EXPECT_MENTIONS(message, file.path());
  return message;
}

// The algorithm a selection chose goes to the timing worker and later windows in
// the point's params where the family can name it (conv2d's graph engines), and
// the selection stays where it cannot (the norms: heuristic or fastest only), so
// the pinned params are always a valid point of their family.
TEST(Families, PinningTheChosenAlgorithmKeepsEveryDefaultPointValid) {
  const std::string engine = "eng22 tile_size=8 tilek=1 stages=4 specfilt=2";
  int conv2d_pinned = 0, norm_kept = 0;
  for (const OperatorFamily& family : operator_families()) {
    for (const nlohmann::json& point : family.default_points()) {
      for (const std::string& chosen :
           {engine, std::string("eng1"),
            std::string("cudnnBatchNormalizationForwardInference CUDNN_BATCHNORM_SPATIAL")}) {
        const nlohmann::json pinned = with_algorithm_pinned(family, point, chosen);
        EXPECT_NO_THROW((void)family.problem(pinned)) << family.name << " " << pinned.dump();
      }
      const nlohmann::json pinned = with_algorithm_pinned(family, point, engine);
      if (family.name == "conv2d" && point.value("algorithm", "") == "heuristic" &&
          point.value("cudnn_api", "") == "graph") {
        EXPECT_EQ(pinned["algorithm"], engine) << point.dump();
        ++conv2d_pinned;
      }
      if (family.name == "layernorm" || family.name == "batchnorm") {
        EXPECT_EQ(pinned, point);
        ++norm_kept;
      }
    }
  }
  EXPECT_GT(conv2d_pinned, 0);
  EXPECT_GT(norm_kept, 0);
}

TEST(SweepValues, RangesAndLists) {
  EXPECT_EQ(values("batch", "1..1024:x2"), ints({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(values("batch", "16..128:+16"), ints({16, 32, 48, 64, 80, 96, 112, 128}));
  EXPECT_EQ(values("filter", "3..9:+2"), ints({3, 5, 7, 9}));
  EXPECT_EQ(values("filter", "3..6"), ints({3, 4, 5, 6}));
  EXPECT_EQ(values("batch", "16..100:x2"), ints({16, 32, 64}));  // the end is not forced
  EXPECT_EQ(values("batch", "3..81:X3"), ints({3, 9, 27, 81}));
  EXPECT_EQ(values("batch", "5..5:x2"), ints({5}));
  EXPECT_EQ(values("batch", "16"), ints({16}));
  EXPECT_EQ(values("batch", " 1, 2 ,4 "), ints({1, 2, 4}));
  EXPECT_EQ(values("filter", "1,3..9:+2,11"), ints({1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(values("batch", "4,1..8:x2"), ints({4, 1, 2, 8}));  // repeats kept once, in order
  for (const json& v : values("batch", "1..4")) EXPECT_TRUE(v.is_number_integer());
  // Text: case-insensitive, stored as the family spells them.
  EXPECT_EQ(values("precision", "FP32,fp16"), (std::vector<json>{"fp32", "fp16"}));
  EXPECT_EQ(values("layout", "NCHW"), (std::vector<json>{"nchw"}));
  // An integer axis' words: pad = same.
  EXPECT_EQ(values("pad", "SAME,0,2"), (std::vector<json>{"same", 0, 2}));
}

TEST(SweepValues, ErrorsNameTheKeyAndTheAllowedValues) {
  std::string m = value_error("batch", "8..1:x2");
  EXPECT_MENTIONS(m, "batch: empty range '8..1:x2'");
  EXPECT_MENTIONS(m, "allowed: A..B with A <= B, e.g. 1..8:x2");
  for (const char* bad : {"1..8:+0", "1..8:+-2"}) {
    m = value_error("batch", bad);
    EXPECT_MENTIONS(m, "batch: bad step");
    EXPECT_MENTIONS(m, "an arithmetic step must be >= 1; allowed: :+D with D >= 1");
  }
  for (const char* bad : {"1..8:x1", "1..8:x0", "1..8:x-2"}) {
    m = value_error("batch", bad);
    EXPECT_MENTIONS(m, "a geometric factor must be >= 2; allowed: :xF with F >= 2");
  }
  for (const char* bad : {"1..8:2", "1..8:y2", "1..8:", "1..8:x"}) {
    m = value_error("batch", bad);
    EXPECT_MENTIONS(m, "batch: bad step");
    EXPECT_MENTIONS(m, "allowed: :xF (geometric, F >= 2) or :+D (arithmetic, D >= 1)");
  }
  m = value_error("batch", "0..8:x2");
  EXPECT_MENTIONS(m, "must start at >= 1; allowed: A..B:xF with A >= 1");
  for (const char* bad : {"1.5", "abc", "16k", "0x10", "+4"}) {
    m = value_error("batch", bad);
    EXPECT_MENTIONS(m, std::string("batch: '") + bad + "' is not an integer");
    EXPECT_MENTIONS(m, "allowed: a value (16), a list (1,2,4), a geometric range A..B:xF");
  }
  EXPECT_MENTIONS(value_error("batch", "1..x"), "batch: range end 'x' is not an integer");
  EXPECT_MENTIONS(value_error("pad", "half"), "or the words same");
  m = value_error("batch", "1,,2");
  EXPECT_MENTIONS(m, "batch: empty item in '1,,2'; allowed: a value");
  EXPECT_MENTIONS(value_error("batch", "1,2,"), "empty item");
  EXPECT_MENTIONS(value_error("batch", " "), "batch: no values; allowed:");
  m = value_error("batch", "1..1000000");
  EXPECT_MENTIONS(m, "more than 100000 values");
  m = value_error("precision", "fp16,fp64");
  EXPECT_MENTIONS(m, "precision: unknown value 'fp64'; allowed: fp32, tf32, fp16, bf16");
  m = value_error("precision", "fp16..fp32");
  EXPECT_MENTIONS(m, "(text takes a list, not a range); allowed: fp32, tf32, fp16, bf16");
  m = value_error("direction", "bwd");
  EXPECT_MENTIONS(m, "allowed: fwd, bwd_data, bwd_filter");
  m = value_error("algorithm", "fastest");
  EXPECT_MENTIONS(m, "allowed: heuristic, exhaustive, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM");
  // The caller's context replaces the key's name.
  m = usage_message([] { parse_value_list(axis_of(conv(), "batch"), "x", "spec.toml:3:9: b"); });
  EXPECT_MENTIONS(m, "spec.toml:3:9: b: 'x' is not an integer");
}

TEST(SweepSpecFlags, CartesianOrderBatchFastest) {
  const SweepSpec spec =
      spec_from_flags(conv(), {{"precision", "fp16,fp32"}, {"filter", "3,7"}, {"batch", "1,2"}});
  ASSERT_EQ(spec.points.size(), 8u);
  // Nested in the family's axis order (batch, ..., filter, ..., precision), first fastest,
  // whatever the order of the flags.
  const std::vector<std::tuple<int, int, std::string>> expected = {
      {1, 3, "fp16"}, {2, 3, "fp16"}, {1, 7, "fp16"}, {2, 7, "fp16"},
      {1, 3, "fp32"}, {2, 3, "fp32"}, {1, 7, "fp32"}, {2, 7, "fp32"}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const json& p = spec.points[i];
    EXPECT_EQ(p["batch"], std::get<0>(expected[i])) << i;
    EXPECT_EQ(p["filter"], std::get<1>(expected[i])) << i;
    EXPECT_EQ(p["precision"], std::get<2>(expected[i])) << i;
    // Axes not given: their baseline, a single value.
    EXPECT_EQ(p["channels"], 64);
    EXPECT_EQ(p["stride"], 2);
    EXPECT_EQ(p["filters"], 64);
    EXPECT_EQ(p["direction"], "fwd");
    EXPECT_EQ(p["pad"], "same");
  }
  EXPECT_EQ(spec.family, "conv2d");
  EXPECT_EQ(spec.name, "conv2d");
  EXPECT_EQ(spec.transfer, TransferMode::none);
  EXPECT_TRUE(spec.pinned_host);
  EXPECT_FALSE(spec.cold_l2);
  EXPECT_EQ(spec.source["kind"], "flags");
  EXPECT_EQ(spec.source["flags"][0], json::array({"precision", "fp16,fp32"}));
}

TEST(SweepSpecFlags, NoFlagsIsTheBaselineNotTheDefaultGrid) {
  const SweepSpec spec = spec_from_flags(conv(), {});
  ASSERT_EQ(spec.points.size(), 1u);
  const json& p = spec.points[0];
  EXPECT_EQ(p, baseline_point(conv()));
  // The paper's baseline: input 112x112x64 NHWC, 64 filters 3x3, stride 2, batch 16.
  EXPECT_EQ(p["batch"], 16);
  EXPECT_EQ(p["channels"], 64);
  EXPECT_EQ(p["height"], 112);
  EXPECT_EQ(p["width"], 112);
  EXPECT_EQ(p["filters"], 64);
  EXPECT_EQ(p["filter"], 3);
  EXPECT_EQ(p["stride"], 2);
  EXPECT_EQ(p["layout"], "nhwc");
  EXPECT_EQ(p["precision"], "fp16");
  EXPECT_EQ(p["math"], "auto");
  // One batch sweep at the baseline: 11 points.
  EXPECT_EQ(spec_from_flags(conv(), {{"batch", "1..1024:x2"}}).points.size(), 11u);
}

TEST(SweepSpecFlags, KeysOptionsAndTheirErrors) {
  const SweepSpec spec = spec_from_flags(conv(), {{"--batch", "4"},
                                                  {"transfer", "h2d-input-d2h-output"},
                                                  {"host", "Pageable"},
                                                  {"l2", "cold"},
                                                  {"name", "mine"}});
  EXPECT_EQ(spec.points.at(0)["batch"], 4);
  EXPECT_EQ(spec.transfer, TransferMode::h2d_input_d2h_output);
  EXPECT_FALSE(spec.pinned_host);
  EXPECT_TRUE(spec.cold_l2);
  EXPECT_EQ(spec.name, "mine");

  std::string m = usage_message([] { spec_from_flags(conv(), {{"--bach", "4"}}); });
  EXPECT_MENTIONS(m, "unknown key 'bach' for conv2d");
  EXPECT_MENTIONS(m, "allowed: batch, channels, height, width, filters, filter, stride, pad");
  EXPECT_MENTIONS(m, "options: transfer, host, l2, name");
  EXPECT_MENTIONS(m, "did you mean 'batch'?");
  m = usage_message([] { spec_from_flags(conv(), {{"batch", "1"}, {"batch", "2"}}); });
  EXPECT_MENTIONS(m, "batch is given twice");
  m = usage_message([] { spec_from_flags(conv(), {{"host", "shared"}}); });
  EXPECT_MENTIONS(m, "host: unknown value 'shared'; allowed: pinned, pageable");
  m = usage_message([] { spec_from_flags(conv(), {{"l2", "hot"}}); });
  EXPECT_MENTIONS(m, "l2: unknown value 'hot'; allowed: warm, cold");
  m = usage_message([] { spec_from_flags(conv(), {{"transfer", "d2h"}}); });
  EXPECT_MENTIONS(m,
                  "transfer: unknown value 'd2h'; allowed: none, h2d_input, h2d_input_d2h_output");
  EXPECT_MENTIONS(usage_message([] { spec_from_flags(conv(), {{"name", ""}}); }), "name is empty");
  m = usage_message([] {
    spec_from_flags(conv(), {{"batch", "1..1024:x2"}, {"filters", "1..10000"}});
  });
  EXPECT_MENTIONS(m, "the product has 110000 points; allowed: at most 100000");

  // Dashes and underscores in keys are the same.
  OperatorFamily toy;
  toy.name = "toy";
  ParamAxis hidden;
  hidden.key = "hidden_size";
  hidden.defaults = json::array({8});
  toy.axes = {hidden};
  toy.problem = [](const json&) -> std::unique_ptr<Problem> {
    return std::make_unique<Conv2dProblem>(Conv2dSpec{});  // any valid problem: no checks
  };
  EXPECT_EQ(spec_from_flags(toy, {{"--hidden-size", "2,4"}}).points.size(), 2u);
  EXPECT_EQ(spec_from_flags(toy, {{"hidden_size", "2"}}).points.at(0), json({{"hidden_size", 2}}));
}

TEST(SweepSpecFlags, ImpossibleShapesAreRejectedNamingTheKey) {
  auto flags_error = [](const Flags& flags) {
    return usage_message([&] { spec_from_flags(conv(), flags); });
  };
  std::string m = flags_error({{"height", "4"}, {"filter", "9"}, {"pad", "0"}, {"batch", "1,2"}});
  EXPECT_MENTIONS(m, "point 0 (batch=1 height=4 filter=9 pad=0)");
  EXPECT_MENTIONS(m, "filter = 9");
  EXPECT_MENTIONS(m, "larger than the padded input height + 2 pad = 4 (height = 4, pad = 0)");
  EXPECT_MENTIONS(m, "allowed: dilation (filter - 1) + 1 <= height + 2 pad");
  // Same padding: 2 + 2 x 3 = 8 >= 7; with dilation 2 it is 6: 2 + 12 >= 13.
  EXPECT_NO_THROW(spec_from_flags(conv(), {{"width", "2"}, {"filter", "7"}}));
  EXPECT_NO_THROW(spec_from_flags(conv(), {{"width", "2"}, {"filter", "7"}, {"dilation", "2"}}));
  m = flags_error({{"width", "2"}, {"filter", "7"}, {"dilation", "2"}, {"pad", "3"}});
  EXPECT_MENTIONS(m, "(dilation = 2: spans 13 pixels) is larger than the padded input width");
  m = flags_error({{"groups", "3"}});
  EXPECT_MENTIONS(m, "groups = 3 must divide both channels = 64 and filters = 64");
  EXPECT_MENTIONS(m, "allowed: a common divisor of channels and filters");
  m = flags_error({{"batch", "0,1"}});
  EXPECT_MENTIONS(m, "point 0 (batch=0)");
  EXPECT_MENTIONS(m, "batch = 0 is out of range; allowed: 1 .. 2147483647");
  m = flags_error({{"pad", "-1"}});
  EXPECT_MENTIONS(m, "pad = -1 is out of range; allowed: 0 ..");
  m = flags_error({{"precision", "fp32"}, {"math", "tensor"}});
  EXPECT_MENTIONS(m, "math = tensor with precision = fp32");
  EXPECT_MENTIONS(m, "allowed with fp32: fma_only");
  m = flags_error({{"algorithm", "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1"}});
  EXPECT_MENTIONS(m, "algorithm = 'CUDNN_CONVOLUTION_BWD_DATA_ALGO_1' is not a fwd algorithm");
  EXPECT_NO_THROW(spec_from_flags(conv(), {{"algorithm", "cudnn_convolution_bwd_data_algo_1"},
                                           {"direction", "bwd_data"},
                                           {"cudnn_api", "legacy"}}));

  // The family's own checks, when it builds a point's problem: unknown keys, wrong
  // types, unknown text.
  m = usage_message([] { (void)conv().problem({{"bach", 1}}); });
  EXPECT_MENTIONS(m, "conv2d: unknown key 'bach'; allowed: batch, channels");
  m = usage_message([] { (void)conv().problem({{"batch", "16"}}); });
  EXPECT_MENTIONS(m, "batch = \"16\" is not an integer; allowed: integers 1 .. 2147483647");
  m = usage_message([] { (void)conv().problem({{"pad", 1.5}}); });
  EXPECT_MENTIONS(m, "pad = 1.5 is not an integer; allowed: integers 0 .. 2147483647 or same");
  m = usage_message([] { (void)conv().problem({{"layout", "NHWC"}}); });
  EXPECT_MENTIONS(m, "layout = \"NHWC\" is not a known value; allowed: nchw, nhwc");
  m = usage_message([] { (void)conv().problem(json::array()); });
  EXPECT_MENTIONS(m, "a point is an object of keys");
  EXPECT_NO_THROW((void)conv().problem(json::object()));  // every key at its baseline
}

TEST(SweepSpecDefault, PaperGridWithBatchExtended) {
  const SweepSpec spec = default_spec(conv());
  EXPECT_EQ(spec.name, "conv2d-default");
  EXPECT_EQ(spec.source["kind"], "default");
  ASSERT_EQ(spec.points.size(), 108u);  // (11 batches + 7 variations) x 2 precisions x 3 directions
  EXPECT_NO_THROW(validate_points(spec, conv()));
  for (const json& point : spec.points) EXPECT_NO_THROW((void)conv().problem(point)) << point;
  const json base = baseline_point(conv());
  std::map<std::string, std::set<std::string>> seen;
  std::set<std::string> unique;
  for (const json& point : spec.points) {
    EXPECT_TRUE(unique.insert(point.dump()).second) << "repeated " << point;
    int changed = 0;
    for (const auto& [key, value] : point.items()) {
      seen[key].insert(value.dump());
      if (key != "precision" && key != "direction" && value != base[key]) ++changed;
    }
    EXPECT_LE(changed, 1) << "one parameter at a time: " << point;
  }
  EXPECT_EQ(seen["batch"].size(), 11u);
  EXPECT_EQ(seen["stride"], (std::set<std::string>{"1", "2", "3"}));
  EXPECT_EQ(seen["filter"], (std::set<std::string>{"3", "7", "9"}));
  EXPECT_EQ(seen["filters"], (std::set<std::string>{"128", "256", "512", "64"}));
  EXPECT_EQ(seen["precision"], (std::set<std::string>{"\"fp16\"", "\"fp32\""}));
  EXPECT_EQ(seen["direction"].size(), 3u);
  EXPECT_EQ(seen["channels"].size(), 1u);
  // Run order: the first block is fp16 forward, batch 1 .. 1024 contiguous.
  for (std::size_t i = 0; i < 11; ++i) {
    EXPECT_EQ(spec.points[i]["batch"], std::int64_t{1} << i);
    EXPECT_EQ(spec.points[i]["precision"], "fp16");
    EXPECT_EQ(spec.points[i]["direction"], "fwd");
  }
  // Each axis' first default is the baseline.
  for (const ParamAxis& axis : conv().axes) {
    ASSERT_TRUE(axis.defaults.is_array()) << axis.key;
    ASSERT_FALSE(axis.defaults.empty()) << axis.key;
    EXPECT_FALSE(axis.help.empty()) << axis.key;
  }
  // The baseline builds the paper's convolution (no GPU work).
  const auto op = conv().problem(base);
  EXPECT_EQ(op->op(), "conv2d_fwd");
  EXPECT_DOUBLE_EQ(op->flops(), 3'699'376'128.0);
  EXPECT_EQ(op->params()["pad_h"], 1);
  EXPECT_EQ(op->params()["p"], 56);
  EXPECT_EQ(op->math_mode(), MathMode::tensor);
  json nine = base;
  nine["filter"] = 9;
  nine["precision"] = "fp32";
  const auto op9 = conv().problem(nine);
  EXPECT_EQ(op9->params()["pad_h"], 4);  // same padding
  EXPECT_EQ(op9->math_mode(), MathMode::fma_only);
}

// A FIFO given as a spec would block the read forever (issue 16): refused at
// once with the path; a directory too.
TEST(SweepSpecToml, AFifoOrDirectoryIsRefusedWithoutBlocking) {
  const std::filesystem::path fifo = std::filesystem::temp_directory_path() /
                                     ("spec-fifo-" + std::to_string(::getpid()) + ".toml");
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string message = usage_message([&] { spec_from_toml(fifo.string(), lookup); });
  std::filesystem::remove(fifo);
  EXPECT_MENTIONS(message, "not a regular file");
  EXPECT_MENTIONS(message, fifo.string());
  EXPECT_MENTIONS(usage_message([&] {
                    spec_from_toml(std::filesystem::temp_directory_path().string(), lookup);
                  }),
                  "not a regular file");
}

// Value lists are deduplicated in order, across array items, in linear time
// (issue 16: a 100,000-value range once took 11 s in a spec against 1.7 s as a flag).
TEST(SweepSpecToml, LongValueListsDedupeInOrder) {
  const TempToml file(
      "long-list",
      "[sweep]\nfamily = \"conv2d\"\n[axes]\nbatch = [\"1..20000\", 7, \"5..9\", 3]\n");
  const SweepSpec spec = spec_from_toml(file.path(), lookup);
  ASSERT_EQ(spec.points.size(), 20000u);
  EXPECT_EQ(spec.points.front().at("batch"), 1);
  EXPECT_EQ(spec.points.back().at("batch"), 20000);
}

TEST(SweepSpecToml, AxesProduct) {
  const TempToml file("axes-spec",
                      "# a sweep\n"
                      "[sweep]\n"
                      "family = \"conv2d\"\n"
                      "name = \"batch-sweep\"\n"
                      "transfer = \"h2d_input\"\n"
                      "host = \"pageable\"\n"
                      "l2 = \"cold\"\n"
                      "[axes]\n"
                      "batch = \"1..8:x2\"\n"
                      "precision = [\"fp16\", \"FP32\"]\n"
                      "filter = 7\n"
                      "output-channels-are = 0\n");
  // (the last key is unknown: checked below; first the good file)
  const TempToml good("axes-spec-good",
                      "[sweep]\nfamily = \"conv2d\"\nname = \"batch-sweep\"\n"
                      "transfer = \"h2d_input\"\nhost = \"pageable\"\nl2 = \"cold\"\n"
                      "[axes]\nbatch = \"1..8:x2\"\nprecision = [\"fp16\", \"FP32\"]\n"
                      "filter = 7\nfilters = [64, \"128..256:x2\"]\n");
  const SweepSpec spec = spec_from_toml(good.path(), lookup);
  ASSERT_EQ(spec.points.size(), 4u * 2 * 3);
  EXPECT_EQ(spec.name, "batch-sweep");
  EXPECT_EQ(spec.transfer, TransferMode::h2d_input);
  EXPECT_FALSE(spec.pinned_host);
  EXPECT_TRUE(spec.cold_l2);
  EXPECT_EQ(spec.points[0]["batch"], 1);
  EXPECT_EQ(spec.points[1]["batch"], 2);
  EXPECT_EQ(spec.points[4]["filters"], 128);
  EXPECT_EQ(spec.points[12]["precision"], "fp32");
  for (const json& p : spec.points) EXPECT_EQ(p["filter"], 7);
  EXPECT_EQ(spec.source["kind"], "toml");
  EXPECT_EQ(spec.source["path"], good.path());
  EXPECT_MENTIONS(spec.source["text"].get<std::string>(), "batch = \"1..8:x2\"");

  const std::string m = usage_message([&] { spec_from_toml(file.path(), lookup); });
  EXPECT_MENTIONS(m, file.path() + ":12:1: [axes]: unknown key 'output-channels-are' for conv2d");
  EXPECT_MENTIONS(m, "allowed: batch, channels, height");
}

TEST(SweepSpecToml, ExplicitPointsAfterTheProduct) {
  const TempToml file("points-spec",
                      "[sweep]\n"
                      "family = \"conv2d\"\n"
                      "[axes]\n"
                      "batch = [16, 32]\n"
                      "[[point]]\n"
                      "batch = 16\n"  // a repeat of the product's first point: kept once
                      "[[point]]\n"
                      "filter = 9\n"
                      "direction = \"bwd_filter\"\n"
                      "[[point]]\n"
                      "stride = [1, 3]\n"
                      "batch = 64\n");
  const SweepSpec spec = spec_from_toml(file.path(), lookup);
  ASSERT_EQ(spec.points.size(), 5u);
  EXPECT_EQ(spec.name, std::filesystem::path(file.path()).stem().string());
  EXPECT_EQ(spec.points[0]["batch"], 16);
  EXPECT_EQ(spec.points[1]["batch"], 32);
  EXPECT_EQ(spec.points[2]["filter"], 9);
  EXPECT_EQ(spec.points[2]["batch"], 16);  // left out: the baseline
  EXPECT_EQ(spec.points[2]["direction"], "bwd_filter");
  EXPECT_EQ(spec.points[3]["stride"], 1);
  EXPECT_EQ(spec.points[4]["stride"], 3);
  EXPECT_EQ(spec.points[4]["batch"], 64);

  const TempToml bare("bare-spec", "[sweep]\nfamily = \"conv2d\"\n");
  const SweepSpec baseline = spec_from_toml(bare.path(), lookup);
  ASSERT_EQ(baseline.points.size(), 1u);
  EXPECT_EQ(baseline.points[0], baseline_point(conv()));
}

TEST(SweepSpecToml, ErrorsCarryFileLineKeyAndAllowed) {
  std::string m = toml_error("[sweep]\nfamily = \"conv2d\"\nsize = 3\n");
  EXPECT_MENTIONS(m,
                  ":3:1: [sweep]: unknown key 'size'; allowed: family, transfer, host, l2, name");
  m = toml_error("[sweep]\nfamily = \"conv2d\"\n[axis]\nbatch = 1\n");
  EXPECT_MENTIONS(m, ":3:2: unknown key 'axis'; allowed: [sweep], [axes], [[point]]");
  m = toml_error("[sweep]\nfamily = \"conv2d\"\n[[point]]\nbatch = 1\nbach = 2\n");
  EXPECT_MENTIONS(m, ":5:1: [[point]] #1: unknown key 'bach' for conv2d; allowed: batch");
  EXPECT_MENTIONS(m, "did you mean 'batch'?");
  m = toml_error("[sweep]\nfamily = \"conv2d\"\n[axes]\nbatch = 1.5\n");
  EXPECT_MENTIONS(m, ":4:9: [axes].batch: a float is not a value; allowed: integers");
  m = toml_error("[sweep]\nfamily = \"conv2d\"\n[axes]\nbatch = []\n");
  EXPECT_MENTIONS(m, ":4:9: [axes].batch: an empty list");
  m = toml_error("[sweep]\nfamily = \"conv2d\"\n[axes]\nbatch = \"8..1:x2\"\n");
  EXPECT_MENTIONS(m, ":4:9: [axes].batch: empty range '8..1:x2'");
  m = toml_error("[sweep]\nfamily = \"conv2d\"\n[axes]\nprecision = [\"fp16\", 3]\n");
  EXPECT_MENTIONS(m, "[axes].precision: unknown value '3'; allowed: fp32, tf32, fp16, bf16");
  m = toml_error("[sweep]\nfamily = \"conv2d\"\n[point]\nbatch = 1\n");
  EXPECT_MENTIONS(m, ":3:2: point is a table; allowed:");
  m = toml_error("[sweep]\nname = \"x\"\n");
  EXPECT_MENTIONS(m, "[sweep] has no family; allowed: family = \"conv2d\"");
  m = toml_error("[axes]\nbatch = 1\n");
  EXPECT_MENTIONS(m, "no [sweep] table");
  m = toml_error("[sweep]\nfamily = \"conv3d\"\n");
  EXPECT_MENTIONS(m, ":2:10: [sweep] family: unknown operator family 'conv3d'; allowed: conv2d");
  m = toml_error("[sweep]\nfamily = 2\n");
  EXPECT_MENTIONS(m, ":2:10: [sweep] family is an integer; allowed: a string");
  m = toml_error("[sweep]\nfamily = \"conv2d\"\nhost = \"gpu\"\n");
  EXPECT_MENTIONS(m, ":3:8: [sweep] host: unknown value 'gpu'; allowed: pinned, pageable");
  // An impossible point names where it came from.
  m = toml_error(
      "[sweep]\nfamily = \"conv2d\"\n[[point]]\nbatch = 2\n[[point]]\n"
      "height = 4\nfilter = 9\npad = 0\n");
  EXPECT_MENTIONS(m, ":5:1: [[point]] #2 point 1 (height=4 filter=9 pad=0): conv2d: filter = 9");
  // Malformed TOML: the parser's line and column.
  m = toml_error("[sweep]\nfamily = \"conv2d\"\n[axes\nbatch = 1\n");
  EXPECT_MENTIONS(m, ":3:");
  EXPECT_MENTIONS(m, "malformed TOML:");
  m = toml_error("[sweep]\nfamily = \"conv2d\"\nfamily = \"lstm\"\n");
  EXPECT_MENTIONS(m, ":3:");
  EXPECT_MENTIONS(m, "malformed TOML:");
  m = usage_message([] { spec_from_toml("/nonexistent/spec.toml", lookup); });
  EXPECT_MENTIONS(m, "cannot read the sweep spec '/nonexistent/spec.toml'");
}

TEST(SweepSpecDryRun, TableAndEstimate) {
  const SweepSpec spec = default_spec(conv());
  const std::string text = describe_points(spec, conv());
  EXPECT_MENTIONS(text, "sweep 'conv2d-default': conv2d, 108 points; transfer none");
  EXPECT_MENTIONS(text, "every point: channels=64 height=112 width=112 pad=same dilation=1");
  EXPECT_MENTIONS(text, "seq  batch  filters  filter  stride  direction   precision");
  EXPECT_MENTIONS(text, "estimated time: ");
  EXPECT_MENTIONS(text, "for 108 points");
  EXPECT_MENTIONS(text, "model: per point");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 1 + 1 + 108 + 2);

  // The model, by hand: baseline fp16 = 3.699 GFLOP, 32.19 MB, 2 launches expected.
  DryRunRoofs roofs;
  roofs.tensor_flops_per_s = 1e12;  // 3.699 ms of compute
  roofs.bytes_per_s = 1e12;         // 32 us of memory
  roofs.call_overhead_s = 0;
  roofs.expected_efficiency = 0.5;  // 7.399 ms per call
  roofs.sample_overhead_s = 1e-3;
  // Budget-bound: 2 x 30 samples of 8.4 ms would take 0.5 s, 2 x 16 of 7.4 ms 0.24 s.
  roofs.call_budget_s = 0.3;
  roofs.stream_budget_s = 0.2;
  roofs.graph_budget_s = 0.1;
  const PointEstimate e = estimate_point(baseline_point(conv()), conv(), roofs);
  EXPECT_DOUBLE_EQ(e.flops, 3'699'376'128.0);
  EXPECT_DOUBLE_EQ(e.min_bytes, 32'186'368.0);
  const double call = 2 * 3.699376128e-3;
  EXPECT_DOUBLE_EQ(e.call_s, call);
  const double setup_check = 0.003 + 0.02, warmup = 3 * (call + 1e-3),
               timing = 0.3 + 0.2 + 0.002 + 0.1, trace = 5 * call + 0.0025,
               counters = 2 * (0.12 / 16 + 2 * 2 * 1e-3 + 2 * 2 * call);
  EXPECT_NEAR(e.point_s, setup_check + warmup + timing + trace + counters, 1e-12);
  // A launch-bound call: 2 launches x 10 ms is the floor.
  roofs.launch_s = 10e-3;
  EXPECT_DOUBLE_EQ(estimate_point(baseline_point(conv()), conv(), roofs).call_s, 20e-3);
  roofs.launch_s = 0;
  roofs.expected_efficiency = 1;
  // fp32 uses the CUDA-core peak; a memory-bound point the bandwidth.
  json fp32 = baseline_point(conv());
  fp32["precision"] = "fp32";
  roofs.cuda_core_flops_per_s = 2e12;
  EXPECT_DOUBLE_EQ(estimate_point(fp32, conv(), roofs).call_s, 3'699'376'128.0 / 2e12);
  roofs.bytes_per_s = 1e9;
  EXPECT_DOUBLE_EQ(estimate_point(fp32, conv(), roofs).call_s, 2 * 32'186'368.0 / 1e9);

  // A default-size estimate is minutes at most, and a single point says so.
  const std::string one = describe_points(spec_from_flags(conv(), {}), conv());
  EXPECT_MENTIONS(one, "1 point;");
  EXPECT_MENTIONS(one, "for 1 point\n");
}

// Sizes that wrap around a 64-bit integer (issue 16: the dry run showed "xfer MB 0"
// for huge shapes, a tensor's bytes cast from a double past 2^64): refused with
// the sizes and the limit; a shape just inside the limit counts exactly.
TEST(SweepSpecDryRun, HugeShapesAreExactOrRefusedNeverWrapped) {
  const std::string over = usage_message([] {
    spec_from_flags(conv(), {{"batch", "65536"},
                             {"channels", "65536"},
                             {"height", "65536"},
                             {"width", "65536"},
                             {"transfer", "h2d_input"}});
  });
  EXPECT_MENTIONS(over, "tensor x = n x c x h x w = 65536 x 65536 x 65536 x 65536 elements");
  EXPECT_MENTIONS(over, "larger than 9223372036854775807 bytes");
  EXPECT_MENTIONS(over, "smaller batch, channels, height or width");
  EXPECT_MENTIONS(usage_message([] {
                    spec_from_flags(conv(), {{"batch", "1"},
                                             {"filters", "2147483647"},
                                             {"channels", "2147483647"},
                                             {"filter", "3"},
                                             {"height", "3"},
                                             {"width", "3"},
                                             {"pad", "0"}});
                  }),
                  "tensor w = k x c/groups x r x s = 2147483647 x 2147483647 x 3 x 3 elements");

  // x holds 2 (2^31 - 1)^2 bytes at fp16, just under 2^63: exact, in the table too.
  const SweepSpec near = spec_from_flags(conv(), {{"batch", "2147483647"},
                                                  {"channels", "2147483647"},
                                                  {"height", "1"},
                                                  {"width", "1"},
                                                  {"precision", "fp16"},
                                                  {"transfer", "h2d_input"}});
  const std::int64_t x_bytes = 2 * std::int64_t{2147483647} * 2147483647;
  const auto problem = conv().problem(near.points.at(0));
  ASSERT_EQ(problem->inputs().size(), 1u);
  EXPECT_EQ(problem->inputs()[0].bytes, static_cast<std::size_t>(x_bytes));
  const PointEstimate estimate =
      estimate_point(near.points.at(0), conv(), {}, near.transfer, near.pinned_host);
  EXPECT_DOUBLE_EQ(estimate.h2d_bytes, static_cast<double>(x_bytes));
  const std::string table = describe_points(near, conv());
  EXPECT_MENTIONS(table, "xfer MB");
  EXPECT_MENTIONS(table, "9.223e+12");  // MB: x's bytes / 1e6, not 0
}

TEST(SweepSpecDryRun, HugeLstmShapesAreExactOrRefusedAndQuick) {
  EXPECT_MENTIONS(usage_message([] {
                    spec_from_flags("lstm", {{"batch", "1"},
                                             {"layers", "2147483647"},
                                             {"hidden_size", "536870911"},
                                             {"bidirectional", "1"}});
                  }),
                  "(layers = 2147483647, directions = 2, input_size = 32, hidden_size = "
                  "536870911) of 4 bytes each is larger than 9223372036854775807 bytes");
  EXPECT_MENTIONS(usage_message([] {
                    spec_from_flags("lstm", {{"batch", "2147483647"},
                                             {"seq_length", "2147483647"},
                                             {"input_size", "2147483647"}});
                  }),
                  "tensor x = seq_length x batch x input_size = 2147483647 x 2147483647 x "
                  "2147483647 elements");
  // 2^31 - 1 layers: the sums over layers are closed forms (a loop over them took
  // seconds per point), and equal the loop's sums.
  const SweepSpec deep = spec_from_flags(
      "lstm", {{"layers", "2147483647"}, {"pass", "backward_weights"}, {"transfer", "h2d_input"}});
  const auto start = std::chrono::steady_clock::now();
  const PointEstimate estimate =
      estimate_point(deep.points.at(0), find_family("lstm"), {}, deep.transfer);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  const double h = 16, i = 32, l = 2147483647;
  EXPECT_DOUBLE_EQ(estimate.flops,
                   8 * h * (i + h + (l - 1) * 2 * h) * 16 * 16 + 8 * l * 16 * h * 16);
  const auto problem = find_family("lstm").problem(deep.points.at(0));
  const std::int64_t weights =
      4 * (4 * 16 * (32 + 16 + 2) + (2147483647LL - 1) * 4 * 16 * (2 * 16 + 2));
  EXPECT_EQ(problem->outputs().at(0).bytes, static_cast<std::size_t>(weights));
}

// Value lists and products past 64 bits: no signed overflow stepping "A..B:+D"
// near the ends of int64 (end - step overflowed), and a product's count past
// long long is printed (its cast was undefined).
TEST(SweepValues, RangesAtTheEdgesOfInt64) {
  EXPECT_EQ(values("batch", "-9223372036854775807..-1:+9223372036854775807"),
            ints({-9223372036854775807LL}));
  EXPECT_EQ(values("batch", "9223372036854775806..9223372036854775807:+9223372036854775807"),
            ints({9223372036854775806LL}));
  EXPECT_EQ(values("batch", "-2..9223372036854775807:+9223372036854775807"),
            ints({-2, 9223372036854775805LL}));
  const std::vector<json> doubling = values("batch", "1..9223372036854775807:x2");
  ASSERT_EQ(doubling.size(), 63u);
  EXPECT_EQ(doubling.back(), json(std::int64_t{1} << 62));
  EXPECT_MENTIONS(usage_message([] {
                    spec_from_flags(conv(), {{"batch", "1..100000"},
                                             {"channels", "1..100000"},
                                             {"height", "1..100000"},
                                             {"width", "1..100000"}});
                  }),
                  "the product has 1e+20 points; allowed: at most 100000");
}

// A spec file's name may hold any bytes; the sweep is named after it and the run
// records its path, both as UTF-8 (a byte that is not becomes U+FFFD), so the
// run's JSON can be written. Text the user gives is UTF-8 or refused.
TEST(SweepSpecToml, NamesFromFileNamesAreUtf8AndFlagsMustBe) {
  const TempToml file("caf\xe9", "[sweep]\nfamily = \"conv2d\"\n");
  const SweepSpec spec = spec_from_toml(file.path(), lookup);
  EXPECT_EQ(spec.name.rfind("caf\xef\xbf\xbd-", 0), 0u) << spec.name;
  EXPECT_NO_THROW((void)to_json(spec).dump());
  EXPECT_EQ(to_json(spec)["source"]["path"].get<std::string>().find('\xe9'), std::string::npos);
  EXPECT_MENTIONS(usage_message([] {
                    spec_from_flags(conv(), {{"name", "caf\xe9"}});
                  }),
                  "name: 'caf\\xe9' is not valid UTF-8");
  EXPECT_MENTIONS(usage_message([] {
                    spec_from_flags(conv(), {{"b\xff"
                                              "atch",
                                              "1"}});
                  }),
                  "flag: 'b\\xffatch' is not valid UTF-8");
  // toml++ refuses a file that is not UTF-8 before any name is read from it.
  EXPECT_MENTIONS(toml_error("[sweep]\nfamily = \"conv2d\"\nname = \"caf\xe9\"\n"), "TOML");
  // The dry run shows escape sequences in a name escaped.
  const std::string shown = describe_points(
      spec_from_flags(conv(), {{"name", "\x1b]0;title\x07red"}, {"algorithm", "heuristic"}}),
      conv());
  EXPECT_EQ(shown.find('\x1b'), std::string::npos);
  EXPECT_MENTIONS(shown, "sweep '\\x1b]0;title\\x07red'");
}

TEST(SweepSpecJson, NumbersStayNumbersAndRoundTrip) {
  const SweepSpec spec =
      spec_from_flags(conv(), {{"batch", "1,2"}, {"l2", "cold"}, {"transfer", "h2d_input"}});
  const json j = to_json(spec);
  EXPECT_EQ(j["name"], "conv2d");
  EXPECT_EQ(j["family"], "conv2d");
  EXPECT_EQ(j["transfer"], "h2d_input");
  EXPECT_TRUE(j["pinned_host"].is_boolean());
  EXPECT_EQ(j["cold_l2"], true);
  EXPECT_TRUE(j["point_count"].is_number_integer());
  EXPECT_EQ(j["point_count"], 2);
  EXPECT_TRUE(j["points"][1]["batch"].is_number_integer());
  EXPECT_EQ(j["points"][1]["batch"], 2);
  EXPECT_TRUE(j["points"][1]["height"].is_number_integer());
  EXPECT_EQ(j["source"]["kind"], "flags");
  const SweepSpec back = spec_from_json(json::parse(j.dump()));
  EXPECT_EQ(to_json(back), j);
  EXPECT_MENTIONS(usage_message([] {
                    spec_from_json({{"name", "x"}});
                  }),
                  "field 'family' is missing or not a string");
  for (TransferMode mode :
       {TransferMode::none, TransferMode::h2d_input, TransferMode::h2d_input_d2h_output})
    EXPECT_EQ(parse_transfer_mode(to_string(mode)), mode);
}

TEST(SweepSpecByName, ThroughFindFamily) {
  EXPECT_EQ(spec_from_flags("conv2d", {{"batch", "1,2"}}).points.size(), 2u);
  const SweepSpec spec = default_spec("conv2d");
  EXPECT_EQ(spec.points.size(), 108u);
  EXPECT_MENTIONS(describe_points(spec), "for 108 points");
  const TempToml file("by-name", "[sweep]\nfamily = \"conv2d\"\n[axes]\nbatch = [1, 2, 4]\n");
  EXPECT_EQ(spec_from_toml(file.path()).points.size(), 3u);
  EXPECT_MENTIONS(usage_message([] { spec_from_flags("conv3d", {}); }), "conv3d");
}

// --metrics (#20): raw CUPTI names on flags and in [sweep]; stored in the spec's
// JSON only when given, so a spec without them is the same bytes as before.
TEST(SweepSpec, MetricsFromFlagsAndToml) {
  const SweepSpec plain = spec_from_flags(conv(), {{"batch", "16"}});
  EXPECT_TRUE(plain.metrics.empty());
  EXPECT_FALSE(to_json(plain).contains("metrics"));

  const SweepSpec flags = spec_from_flags(
      conv(),
      {{"batch", "16"},
       {"--metrics", " sm__cycles_elapsed.avg, dram__bytes_read.sum,sm__cycles_elapsed.avg"}});
  EXPECT_EQ(flags.metrics,
            (std::vector<std::string>{"sm__cycles_elapsed.avg", "dram__bytes_read.sum"}));
  EXPECT_EQ(flags.points, plain.points);
  const json stored = to_json(flags);
  EXPECT_EQ(stored.at("metrics"), json({"sm__cycles_elapsed.avg", "dram__bytes_read.sum"}));
  EXPECT_EQ(spec_from_json(stored).metrics, flags.metrics);
  EXPECT_EQ(spec_from_json(to_json(plain)).metrics, std::vector<std::string>{});

  const SweepSpec list = spec_from_toml_text(
      "[sweep]\nfamily = \"conv2d\"\nmetrics = [\"dram__bytes_read.sum\", "
      "\"sm__warps_active.avg.pct_of_peak_sustained_active\"]\n",
      "m.toml", lookup);
  EXPECT_EQ(list.metrics,
            (std::vector<std::string>{"dram__bytes_read.sum",
                                      "sm__warps_active.avg.pct_of_peak_sustained_active"}));
  const SweepSpec text = spec_from_toml_text(
      "[sweep]\nfamily = \"conv2d\"\nmetrics = \"dram__bytes_read.sum\"\n", "m.toml", lookup);
  EXPECT_EQ(text.metrics, std::vector<std::string>{"dram__bytes_read.sum"});
  SweepSpec added = text;
  add_metrics(added, "sm__cycles_elapsed.avg,dram__bytes_read.sum", "--metrics");
  EXPECT_EQ(added.metrics,
            (std::vector<std::string>{"dram__bytes_read.sum", "sm__cycles_elapsed.avg"}));
}

TEST(SweepSpec, BadMetricNamesAreUsageErrorsNamingTheFix) {
  for (const char* bad :
       {"", "a,,b", "dram_bytes.sum", "dram__bytes read.sum", "__x.sum", "dram__bytes;rm"}) {
    const std::string message = usage_message([&] { parse_metric_list(bad, "--metrics"); });
    EXPECT_MENTIONS(message, "--metrics");
    EXPECT_MENTIONS(message, "timeroof metrics --filter");
  }
  EXPECT_MENTIONS(usage_message([] {
                    spec_from_toml_text("[sweep]\nfamily = \"conv2d\"\nmetrics = [1]\n", "m.toml",
                                        lookup);
                  }),
                  "m.toml:3");
  EXPECT_MENTIONS(usage_message([] {
                    spec_from_toml_text("[sweep]\nfamily = \"conv2d\"\nmetrics = 3\n", "m.toml",
                                        lookup);
                  }),
                  "a string or a list of strings");
  EXPECT_MENTIONS(usage_message([] {
                    spec_from_json({{"name", "x"},
                                    {"family", "conv2d"},
                                    {"transfer", "none"},
                                    {"pinned_host", true},
                                    {"cold_l2", false},
                                    {"points", json::array()},
                                    {"metrics", "dram__bytes_read.sum"}});
                  }),
                  "metrics");
}

TEST(SweepSpec, TheDryRunNamesTheExtraMetrics) {
  const SweepSpec spec =
      spec_from_flags(conv(), {{"batch", "16"}, {"metrics", "dram__bytes_read.sum"}});
  EXPECT_MENTIONS(describe_points(spec, conv()), "extra metrics: dram__bytes_read.sum");
  EXPECT_EQ(describe_points(spec_from_flags(conv(), {{"batch", "16"}}), conv()).find("extra"),
            std::string::npos);
}

}  // namespace
}  // namespace timeroof
