// The rules that pick which launches of a profiled program get hardware
// counters (core/kernel_selection.hpp), and their environment form.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/kernel_selection.hpp"

namespace timeroof {
namespace {

const LaunchShape kSmall{{64, 1, 1}, {256, 1, 1}};
const LaunchShape kLarge{{4096, 1, 1}, {256, 1, 1}};

// The launches a selector picks out of `launches`, by index.
struct Launch {
  std::string name;
  LaunchShape shape;
  std::vector<std::string> ranges;  // pushed, outermost first
  std::string context() const { return ranges.empty() ? std::string() : ranges.back(); }
};
std::vector<int> picked(const KernelSelectionOptions& options,
                        const std::vector<Launch>& launches) {
  KernelSelector selector(options);
  std::vector<int> out;
  for (std::size_t i = 0; i < launches.size(); ++i)
    if (selector.select(launches[i].name, launches[i].shape, launches[i].context(),
                        launches[i].ranges))
      out.push_back(static_cast<int>(i));
  return out;
}

// Two steps of the same four launches: gemm small, gemm large, relu small, gemm small.
std::vector<Launch> two_steps() {
  std::vector<Launch> step = {{"gemm_kernel", kSmall, {"step", "layer0"}},
                              {"gemm_kernel", kLarge, {"step", "layer0"}},
                              {"relu_kernel", kSmall, {"step", "layer1"}},
                              {"gemm_kernel", kSmall, {"step", "layer1"}}};
  std::vector<Launch> all = step;
  all.insert(all.end(), step.begin(), step.end());
  return all;
}

// gemm small in layer1 is the configuration of layer0's first launch in another
// context, so it is measured too: its work may differ (another reduction length).
TEST(KernelSelection, DefaultMeasuresTheFirstLaunchOfEachConfigurationInEachContext) {
  EXPECT_EQ(picked({}, two_steps()), (std::vector<int>{0, 1, 2, 3}));
  // Without ranges, the configuration alone.
  std::vector<Launch> bare = two_steps();
  for (Launch& l : bare) l.ranges.clear();
  EXPECT_EQ(picked({}, bare), (std::vector<int>{0, 1, 2}));
  // The context is the innermost range only: step 2's launches are step 1's.
  std::vector<Launch> renamed = two_steps();
  for (std::size_t i = 4; i < renamed.size(); ++i) renamed[i].ranges.front() = "step 2";
  EXPECT_EQ(picked({}, renamed), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(KernelSelector(KernelSelectionOptions{}).wants_context());
  KernelSelectionOptions every;
  every.every = true;
  EXPECT_FALSE(KernelSelector(every).wants_context());
}

TEST(KernelSelection, EveryMeasuresRepeatsUpToTheCount) {
  KernelSelectionOptions o;
  o.every = true;
  EXPECT_EQ(picked(o, two_steps()), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  o.count = 3;
  EXPECT_EQ(picked(o, two_steps()), (std::vector<int>{0, 1, 2}));
}

TEST(KernelSelection, SkipPassesOverMatchingLaunchesOnly) {
  KernelSelectionOptions o;
  o.kernels = "^gemm";
  o.skip = 3;  // the three gemm launches of step 0
  EXPECT_EQ(picked(o, two_steps()), (std::vector<int>{4, 5, 7}));
  o.every = true;
  EXPECT_EQ(picked(o, two_steps()), (std::vector<int>{4, 5, 7}));
}

TEST(KernelSelection, NvtxMatchesAnyOpenRange) {
  KernelSelectionOptions o;
  o.nvtx = "^layer1$";
  o.every = true;
  EXPECT_EQ(picked(o, two_steps()), (std::vector<int>{2, 3, 6, 7}));
  o.nvtx = "step";
  EXPECT_EQ(picked(o, two_steps()).size(), 8U);
  KernelSelector outside(o);
  EXPECT_FALSE(outside.select("gemm_kernel", kSmall, "", {}));
  EXPECT_TRUE(outside.wants_nvtx());
  EXPECT_FALSE(KernelSelector(KernelSelectionOptions{}).wants_nvtx());
}

TEST(KernelSelection, AFailedMeasurementMayBeRetriedAndDoesNotUseTheCount) {
  KernelSelectionOptions o;
  o.count = 1;
  KernelSelector selector(o);
  ASSERT_TRUE(selector.select("k", kSmall, "layer0", {}));
  EXPECT_TRUE(selector.exhausted());
  selector.measurement_failed("k", kSmall, "layer0");
  EXPECT_FALSE(selector.exhausted());
  EXPECT_TRUE(selector.select("k", kSmall, "layer0", {}));   // the same launch again
  EXPECT_FALSE(selector.select("k", kLarge, "layer0", {}));  // count used up
}

TEST(KernelSelection, DisabledSelectsNothing) {
  KernelSelectionOptions o;
  o.enabled = false;
  EXPECT_TRUE(picked(o, two_steps()).empty());
  EXPECT_TRUE(KernelSelector(o).exhausted());
}

std::map<std::string, std::string> g_environment;
const char* from_map(const char* name) {
  const auto found = g_environment.find(name);
  return found == g_environment.end() ? nullptr : found->second.c_str();
}

TEST(KernelSelection, EnvironmentRoundTrips) {
  KernelSelectionOptions o;
  o.kernels = "gemm|conv";
  o.nvtx = "layer[0-9]+";
  o.skip = 12;
  o.count = 34;
  o.every = true;
  o.metrics = {"sm__cycles_elapsed.avg", "dram__bytes_read.sum"};
  o.iteration_range = "^step$";
  g_environment.clear();
  for (const auto& [name, value] : selection_environment(o)) g_environment[name] = value;
  const KernelSelectionOptions back = selection_from_environment(&from_map);
  EXPECT_EQ(back.enabled, o.enabled);
  EXPECT_EQ(back.kernels, o.kernels);
  EXPECT_EQ(back.nvtx, o.nvtx);
  EXPECT_EQ(back.skip, o.skip);
  EXPECT_EQ(back.count, o.count);
  EXPECT_EQ(back.every, o.every);
  EXPECT_EQ(back.metrics, o.metrics);
  EXPECT_EQ(back.iteration_range, o.iteration_range);

  g_environment.clear();  // nothing set: the defaults
  const KernelSelectionOptions defaults = selection_from_environment(&from_map);
  EXPECT_TRUE(defaults.enabled);
  EXPECT_EQ(defaults.count, kDefaultMeasuredLaunches);
  EXPECT_FALSE(defaults.every);
  EXPECT_TRUE(defaults.iteration_range.empty());
}

TEST(KernelSelection, MalformedEnvironmentNamesTheVariable) {
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{kSkipVariable, "-1"},
                                                        {kCountVariable, "12x"},
                                                        {kCountVariable, ""},
                                                        {kEveryVariable, "yes"},
                                                        {kCountersVariable, "2"}}) {
    g_environment = {{name, value}};
    try {
      selection_from_environment(&from_map);
      ADD_FAILURE() << name << "=" << value << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

TEST(KernelSelection, ProblemsNameTheOptionAndTheFix) {
  KernelSelectionOptions o;
  EXPECT_FALSE(selection_problem(o).has_value());
  o.kernels = "(";
  ASSERT_TRUE(selection_problem(o).has_value());
  EXPECT_NE(selection_problem(o)->find("--kernels '('"), std::string::npos);
  o.kernels.clear();
  o.nvtx = "[";
  EXPECT_NE(selection_problem(o)->find("--nvtx"), std::string::npos);
  o.nvtx.clear();
  o.count = 0;
  EXPECT_NE(selection_problem(o)->find("--no-counters"), std::string::npos);
  o.enabled = false;  // nothing measured anyway
  EXPECT_FALSE(selection_problem(o).has_value());
}

// Iteration replay measures every kernel of an instance: a narrower kernel
// selection contradicts it; its regex is checked like the others.
TEST(KernelSelection, IterationRangeExcludesTheLaunchSelection) {
  KernelSelectionOptions o;
  o.iteration_range = "^step$";
  o.skip = 2;
  EXPECT_FALSE(selection_problem(o).has_value());
  o.iteration_range = "(step";
  ASSERT_TRUE(selection_problem(o).has_value());
  EXPECT_NE(selection_problem(o)->find("--iteration-range '(step'"), std::string::npos);
  o.iteration_range = "^step$";
  o.skip = 0;  // no traced instance for the counters to go to
  ASSERT_TRUE(selection_problem(o).has_value());
  EXPECT_NE(selection_problem(o)->find("--skip 1 or more"), std::string::npos);
  o.skip = 1;
  for (int option = 0; option < 3; ++option) {
    KernelSelectionOptions both = o;
    if (option == 0) both.kernels = "gemm";
    if (option == 1) both.nvtx = "layer";
    if (option == 2) both.every = true;
    ASSERT_TRUE(selection_problem(both).has_value()) << option;
    EXPECT_NE(selection_problem(both)->find("excludes --kernels, --nvtx and --every"),
              std::string::npos)
        << *selection_problem(both);
  }
}

}  // namespace
}  // namespace timeroof
