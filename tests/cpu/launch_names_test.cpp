// CPU tier: kernel names taken at the launch (counters/launch_names.hpp, #17/#18)
// joined to hand-made CUPTI kernel records by correlation id: a record takes its
// launch's name, one whose CUPTI name differs is counted as renamed and keeps
// CUPTI's beside it, a record with no launch name (a graph launch) keeps CUPTI's.
// The namer's cache of names by handle, against a fake driver whose handles
// change names only where code is unloaded: the driver is asked once per
// handle, and again after every kind of unload (a reused handle gets its new
// name), never for a name queried before an unload.
//
// generated_cuda_meta.h (the launch calls' parameter structs) names the legacy
// types cuda.h declares only for this.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "counters/launch_names.hpp"

#include <cupti_driver_cbid.h>
#include <generated_cuda_meta.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "counters/activity_records.hpp"
#include "counters/launch_namer.hpp"

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

TEST(KernelNameCache, AsksOncePerHandleAndCounts) {
  KernelNameCache cache;
  int a = 0, b = 0;
  KernelNameCache::Lookup first = cache.find(&a);
  EXPECT_EQ(first.name, nullptr) << "nothing cached yet";
  const LaunchNames::Name inserted = cache.insert(&a, "_Z1av", first.generation);
  ASSERT_NE(inserted, nullptr);
  EXPECT_EQ(*inserted, "_Z1av");
  const KernelNameCache::Lookup again = cache.find(&a);
  ASSERT_NE(again.name, nullptr);
  EXPECT_EQ(*again.name, "_Z1av");
  EXPECT_EQ(again.name, inserted) << "the cached string is shared, not copied";
  EXPECT_EQ(cache.find(&b).name, nullptr) << "another handle";
  const NameCacheCounts counts = cache.counts();
  EXPECT_EQ(counts.hits, 1u);
  EXPECT_EQ(counts.queries, 2u);
  EXPECT_EQ(counts.clears, 0u);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(KernelNameCache, ClearForgetsEveryHandle) {
  KernelNameCache cache;
  int a = 0, b = 0;
  cache.insert(&a, "a", cache.find(&a).generation);
  cache.insert(&b, "b", cache.find(&b).generation);
  EXPECT_EQ(cache.size(), 2u);
  cache.clear();
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.find(&a).name, nullptr);
  EXPECT_EQ(cache.find(&b).name, nullptr);
  EXPECT_EQ(cache.counts().clears, 1u);
  EXPECT_EQ(cache.counts().queries, 4u);
  cache.reset();
  const NameCacheCounts zero = cache.counts();
  EXPECT_EQ(zero.hits + zero.queries + zero.clears, 0u);
}

TEST(KernelNameCache, ANameQueriedBeforeAClearIsNotCached) {
  KernelNameCache cache;
  int handle = 0;
  const std::uint64_t generation = cache.find(&handle).generation;
  cache.clear();  // another thread unloaded code while the driver was asked
  const LaunchNames::Name name = cache.insert(&handle, "maybe_freed", generation);
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(*name, "maybe_freed") << "still this launch's name";
  EXPECT_EQ(cache.find(&handle).name, nullptr) << "but not cached past the clear";
  EXPECT_EQ(cache.size(), 0u);
}

TEST(KernelNameCache, ManyThreadsSeeOnlyTheirHandlesNames) {
  KernelNameCache cache;
  constexpr int kHandles = 64;
  std::vector<int> handles(kHandles);
  std::vector<std::string> truth(kHandles);
  for (int i = 0; i < kHandles; ++i) truth[static_cast<std::size_t>(i)] = "k" + std::to_string(i);
  std::atomic<int> wrong{0};
  std::vector<std::thread> launchers;
  for (int t = 0; t < 4; ++t)
    launchers.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        const auto h = static_cast<std::size_t>((i * 7 + t) % kHandles);
        if (t == 0 && i % 500 == 0) cache.clear();  // an unload now and then
        KernelNameCache::Lookup found = cache.find(&handles[h]);
        LaunchNames::Name name =
            found.name ? found.name : cache.insert(&handles[h], truth[h], found.generation);
        if (*name != truth[h]) ++wrong;
      }
    });
  for (std::thread& t : launchers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  const NameCacheCounts counts = cache.counts();
  EXPECT_EQ(counts.hits + counts.queries, 4u * 5000u);
  EXPECT_GT(counts.hits, counts.queries) << "most lookups hit";
  EXPECT_EQ(counts.clears, 10u);
}

// A driver whose handles are names in a table: `functions` answer cuFuncGetName,
// `kernels` (a library's CUkernel) only cuKernelGetName. Counts the calls.
struct FakeDriver {
  std::map<const void*, std::string> functions;
  std::map<const void*, std::string> kernels;
  int function_queries = 0;
  int kernel_queries = 0;
};
FakeDriver* g_driver = nullptr;

CUresult fake_function_name(const char** name, CUfunction function) {
  ++g_driver->function_queries;
  const auto found = g_driver->functions.find(function);
  if (found == g_driver->functions.end()) return CUDA_ERROR_INVALID_HANDLE;
  *name = found->second.c_str();
  return CUDA_SUCCESS;
}

CUresult fake_kernel_name(const char** name, CUkernel kernel) {
  ++g_driver->kernel_queries;
  const auto found = g_driver->kernels.find(kernel);
  if (found == g_driver->kernels.end()) return CUDA_ERROR_INVALID_HANDLE;
  *name = found->second.c_str();
  return CUDA_SUCCESS;
}

class LaunchNamerCache : public ::testing::Test {
 protected:
  LaunchNamerCache() { g_driver = &driver_; }
  ~LaunchNamerCache() override { g_driver = nullptr; }

  // cuLaunchKernel (or cuLaunchKernelEx) of `handle` under `correlation_id`:
  // the entry callback, then the exit with `result`.
  void launch(const void* handle, std::uint32_t correlation_id, bool launch_ex = false,
              CUresult result = CUDA_SUCCESS) {
    cuLaunchKernel_params params{};
    params.f = static_cast<CUfunction>(const_cast<void*>(handle));
    cuLaunchKernelEx_params params_ex{};
    params_ex.f = params.f;
    const CUpti_CallbackId cbid = launch_ex ? CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx
                                            : CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    CUpti_CallbackData call{};
    call.callbackSite = CUPTI_API_ENTER;
    call.functionParams = launch_ex ? static_cast<const void*>(&params_ex) : &params;
    call.functionReturnValue = &result;
    call.correlationId = correlation_id;
    namer_.on_driver_callback(cbid, call);
    call.callbackSite = CUPTI_API_EXIT;
    namer_.on_driver_callback(cbid, call);
  }
  void driver_call(CUpti_CallbackId cbid) {
    CUresult result = CUDA_SUCCESS;
    CUpti_CallbackData call{};
    call.functionReturnValue = &result;
    call.correlationId = 999;
    for (CUpti_ApiCallbackSite site : {CUPTI_API_ENTER, CUPTI_API_EXIT}) {
      call.callbackSite = site;
      namer_.on_driver_callback(cbid, call);
    }
  }

  FakeDriver driver_;
  LaunchNames names_;
  LaunchNamer namer_{names_, KernelNameQueries{&fake_function_name, &fake_kernel_name}};
  int module_function_ = 0;  // addresses standing for handles
  int library_kernel_ = 0;
};

TEST_F(LaunchNamerCache, AsksTheDriverOncePerHandle) {
  driver_.functions[&module_function_] = "_Z6modulev";
  driver_.kernels[&library_kernel_] = "_Z7libraryv";
  launch(&module_function_, 1);
  launch(&library_kernel_, 2, true);
  launch(&module_function_, 3, true);
  launch(&library_kernel_, 4);
  launch(&module_function_, 5);
  EXPECT_EQ(names_.take(1), "_Z6modulev");
  EXPECT_EQ(names_.take(2), "_Z7libraryv");
  EXPECT_EQ(names_.take(3), "_Z6modulev");
  EXPECT_EQ(names_.take(4), "_Z7libraryv");
  EXPECT_EQ(names_.take(5), "_Z6modulev");
  const NameCacheCounts counts = namer_.cache_counts();
  EXPECT_EQ(counts.queries, 2u);
  EXPECT_EQ(counts.hits, 3u);
  EXPECT_EQ(driver_.function_queries, 2) << "once per handle (the kernel's failed)";
  EXPECT_EQ(driver_.kernel_queries, 1) << "once, for the library's kernel";
}

TEST_F(LaunchNamerCache, OtherCallsLeaveTheCache) {
  driver_.functions[&module_function_] = "first";
  launch(&module_function_, 1);
  // Not an unload: the handle still names what it did (so a driver's renaming
  // without an unload, which cannot happen, would not be seen: the cache serves).
  driver_.functions[&module_function_] = "renamed_without_unload";
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
  namer_.on_resource_callback(CUPTI_CBID_RESOURCE_MODULE_LOADED);
  namer_.on_resource_callback(CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING);
  launch(&module_function_, 2);
  EXPECT_EQ(names_.take(2), "first");
  EXPECT_EQ(namer_.cache_counts().clears, 0u);
  EXPECT_EQ(namer_.cache_counts().hits, 1u);
}

// The driver may give a freed handle's address to the next module's kernel
// (cuDNN unloads its runtime-compiled kernels with their plans): after each way
// code is unloaded, the reused handle's launch takes its new name.
TEST_F(LaunchNamerCache, AReusedHandleAfterAnUnloadGetsItsNewName) {
  struct Unload {
    const char* what;
    bool resource;
    CUpti_CallbackId cbid;
  };
  const Unload unloads[] = {
      {"cuModuleUnload", false, CUPTI_DRIVER_TRACE_CBID_cuModuleUnload},
      {"cuLibraryUnload", false, CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload},
      {"cuCtxDestroy", false, CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2},
      {"cuDevicePrimaryCtxReset", false, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2},
      {"cuDevicePrimaryCtxRelease", false, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2},
      {"cuGreenCtxDestroy", false, CUPTI_DRIVER_TRACE_CBID_cuGreenCtxDestroy},
      {"module unload (resource)", true, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING},
      {"context destroy (resource)", true, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING},
  };
  std::uint32_t correlation_id = 0;
  int round = 0;
  for (const Unload& unload : unloads) {
    SCOPED_TRACE(unload.what);
    const std::string before = "kernel_" + std::to_string(round);
    driver_.functions[&module_function_] = before;
    launch(&module_function_, ++correlation_id);
    launch(&module_function_, ++correlation_id);  // from the cache
    EXPECT_EQ(names_.take(correlation_id - 1), before);
    EXPECT_EQ(names_.take(correlation_id), before);
    // The code is unloaded, another loaded at the same address.
    if (unload.resource)
      namer_.on_resource_callback(unload.cbid);
    else
      driver_call(unload.cbid);
    const std::string after = "kernel_" + std::to_string(++round);
    driver_.functions[&module_function_] = after;
    const int queries_before = driver_.function_queries;
    launch(&module_function_, ++correlation_id);
    EXPECT_EQ(names_.take(correlation_id), after) << "not the unloaded kernel's name";
    EXPECT_EQ(driver_.function_queries, queries_before + 1) << "asked again";
    driver_.functions.erase(&module_function_);
    namer_.on_resource_callback(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);  // next round
  }
  const NameCacheCounts counts = namer_.cache_counts();
  EXPECT_EQ(counts.hits, std::size(unloads));
  EXPECT_EQ(counts.queries, 2 * std::size(unloads));
}

TEST_F(LaunchNamerCache, AFailedLaunchIsForgottenAndAnUnnamedOneKeepsCuptis) {
  driver_.functions[&module_function_] = "k";
  launch(&module_function_, 1, false, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(names_.take(1), std::nullopt) << "no record comes for a failed launch";
  launch(&library_kernel_, 2);  // the driver names it neither way
  EXPECT_EQ(names_.take(2), std::nullopt);
  launch(&library_kernel_, 3);
  EXPECT_EQ(driver_.kernel_queries, 2) << "an unnamed handle is not cached";
  launch(nullptr, 4);
  EXPECT_EQ(names_.take(4), std::nullopt);
  EXPECT_EQ(names_.size(), 0u);
}

}  // namespace
}  // namespace timeroof
