// CPU tier: kernel names taken at the launch (counters/launch_names.hpp, #17/#18)
// joined to hand-made CUPTI kernel records by correlation id: a record takes its
// launch's name, one whose CUPTI name differs is counted as renamed and keeps
// CUPTI's beside it, a record with no launch name (a graph launch) keeps CUPTI's.
#include "counters/launch_names.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "counters/activity_records.hpp"

namespace timeroof {
namespace {

CUpti_ActivityKernel10 kernel_record(const char* cupti_name, std::uint32_t correlation_id) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = cupti_name;
  k.gridX = k.gridY = k.gridZ = 1;
  k.blockX = k.blockY = k.blockZ = 32;
  k.start = 100;
  k.end = 200;
  k.correlationId = correlation_id;
  return k;
}

KernelActivity decoded_kernel(ActivityDecoder& decoder, const CUpti_ActivityKernel10& record) {
  const DecodedActivity decoded = decoder.decode(reinterpret_cast<const CUpti_Activity*>(&record));
  const auto* k = std::get_if<KernelActivity>(&decoded);
  EXPECT_NE(k, nullptr) << "a kernel record decodes as a kernel";
  return k ? *k : KernelActivity{};
}

TEST(LaunchNames, TakeGivesEachLaunchsNameOnce) {
  LaunchNames names;
  names.record(7, "_Z5alphav");
  names.record(9, "beta");
  EXPECT_EQ(names.size(), 2u);
  EXPECT_EQ(names.take(7), "_Z5alphav");
  EXPECT_EQ(names.take(7), std::nullopt) << "one kernel record per launch";
  EXPECT_EQ(names.take(8), std::nullopt) << "never launched";
  names.forget(9);  // the launch failed
  EXPECT_EQ(names.take(9), std::nullopt);
  EXPECT_EQ(names.size(), 0u);
  names.record(3, "gamma");
  names.record(3, "delta");  // an id is the latest launch's
  EXPECT_EQ(names.take(3), "delta");
  names.record(4, "epsilon");
  names.clear();
  EXPECT_EQ(names.size(), 0u);
}

TEST(LaunchNames, TheCallerMayFreeTheNameAfterRecording) {
  LaunchNames names;
  std::string driver_owned = "_Z6kernelPf";
  names.record(1, driver_owned);
  driver_owned.assign("overwritten by the next module");
  EXPECT_EQ(names.take(1), "_Z6kernelPf");
}

TEST(LaunchNames, ChoosesTheLaunchNameAndSaysWhenItCorrected) {
  // Both the same: from the launch, nothing corrected.
  ChosenKernelName same = choose_kernel_name("_Z1kv", std::string("_Z1kv"));
  EXPECT_EQ(same.raw, "_Z1kv");
  EXPECT_TRUE(same.from_launch);
  EXPECT_FALSE(same.renamed);
  // CUPTI's stale name: the launch's wins, and it counts.
  ChosenKernelName stale = choose_kernel_name("old_kernel", std::string("new_kernel"));
  EXPECT_EQ(stale.raw, "new_kernel");
  EXPECT_TRUE(stale.from_launch);
  EXPECT_TRUE(stale.renamed);
  // No launch name (graph launch): CUPTI's.
  ChosenKernelName graph = choose_kernel_name("graph_node_kernel", std::nullopt);
  EXPECT_EQ(graph.raw, "graph_node_kernel");
  EXPECT_FALSE(graph.from_launch);
  EXPECT_FALSE(graph.renamed);
  // CUPTI gave no name: the launch's, not counted as a correction.
  ChosenKernelName unnamed = choose_kernel_name(nullptr, std::string("k"));
  EXPECT_EQ(unnamed.raw, "k");
  EXPECT_TRUE(unnamed.from_launch);
  EXPECT_FALSE(unnamed.renamed);
  // An empty launch name is no name.
  EXPECT_EQ(choose_kernel_name("k2", std::string()).raw, "k2");
}

TEST(LaunchNames, DecoderJoinsRecordsToLaunchesByCorrelationId) {
  LaunchNames names;
  // Three launches named at their launch; the second's module was unloaded and
  // CUPTI names its record after the first's kernel (the stale handle).
  names.record(11, "_Z12first_kernelPf");
  names.record(12, "_Z13second_kernelPf");
  names.record(13, "_Z12third_kernelv");
  ActivityDecoder decoder;
  decoder.name_kernels_from(&names);

  const KernelActivity first = decoded_kernel(decoder, kernel_record("_Z12first_kernelPf", 11));
  EXPECT_EQ(first.name, "first_kernel(float*)");
  EXPECT_TRUE(first.named_at_launch);
  EXPECT_FALSE(first.cupti_name.has_value());

  const KernelActivity second = decoded_kernel(decoder, kernel_record("_Z12first_kernelPf", 12));
  EXPECT_EQ(second.name, "second_kernel(float*)") << "the launched kernel, not CUPTI's stale name";
  EXPECT_TRUE(second.named_at_launch);
  ASSERT_TRUE(second.cupti_name.has_value());
  EXPECT_EQ(*second.cupti_name, "first_kernel(float*)") << "demangled like the name";
  EXPECT_EQ(second.correlation_id, 12u);

  // A graph launch's kernel (no launch callback, id 40): CUPTI's name.
  const KernelActivity graph = decoded_kernel(decoder, kernel_record("_Z10graph_nodev", 40));
  EXPECT_EQ(graph.name, "graph_node()");
  EXPECT_FALSE(graph.named_at_launch);
  EXPECT_FALSE(graph.cupti_name.has_value());

  EXPECT_EQ(names.size(), 1u) << "a joined launch is taken out; id 13's record has not come";

  // Without launch names every record keeps CUPTI's name.
  decoder.name_kernels_from(nullptr);
  const KernelActivity plain = decoded_kernel(decoder, kernel_record("_Z5stalev", 13));
  EXPECT_EQ(plain.name, "stale()");
  EXPECT_FALSE(plain.named_at_launch);
  EXPECT_EQ(names.size(), 1u) << "left alone";
}

TEST(LaunchNames, LaunchesFromManyThreadsAreAllKept) {
  LaunchNames names;
  constexpr std::uint32_t kThreads = 4;
  constexpr std::uint32_t kPerThread = 2000;
  std::vector<std::thread> launchers;
  for (std::uint32_t t = 0; t < kThreads; ++t)
    launchers.emplace_back([&names, t] {
      for (std::uint32_t i = 0; i < kPerThread; ++i) {
        const std::uint32_t id = t * kPerThread + i;
        names.record(id, "kernel_" + std::to_string(id));
      }
    });
  for (std::thread& t : launchers) t.join();
  std::uint32_t found = 0;
  for (std::uint32_t id = 0; id < kThreads * kPerThread; ++id)
    if (names.take(id) == "kernel_" + std::to_string(id)) ++found;
  EXPECT_EQ(found, kThreads * kPerThread);
  EXPECT_EQ(names.size(), 0u);
}

}  // namespace
}  // namespace timeroof
