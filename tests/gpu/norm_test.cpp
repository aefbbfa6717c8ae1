// GPU tier, the normalization families: every kind, phase, direction and
// precision of layernorm and batchnorm passes its check against the host
// reference in double (y, statistics, the running-stat update, dx, dscale,
// dbias; batchnorm inference through cuDNN's legacy call); run() captures into a CUDA graph and
// replays bitwise; through the runner a large point's T_stream gives the achieved bandwidth
// (min_bytes / T_stream) against the HBM copy roof measured here, with the DRAM counters' bytes
// against min_bytes; and `timeroof sweep` stores both default sweeps.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "counters/counter_access.hpp"
#include "gpu/check.hpp"
#include "gpu/device.hpp"
#include "gpu/handles.hpp"
#include "kernels/ceilings.hpp"
#include "src/store/results_store.hpp"
#include "sweeps/family.hpp"
#include "sweeps/implementations.hpp"
#include "sweeps/norm.hpp"
#include "sweeps/runner.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/gpu/operator_capture.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

std::shared_ptr<LibraryHandles> shared_handles() {
  static std::shared_ptr<LibraryHandles> handles = std::make_shared<LibraryHandles>();
  return handles;
}

constexpr NormPhase kPhases[] = {NormPhase::inference, NormPhase::training};
constexpr NormDirection kDirections[] = {NormDirection::fwd, NormDirection::bwd};

// Prepares and checks one operator; the check must pass.
void prepare_and_check(Operator& op, const Stream& stream) {
  const std::string name = op.op() + " " + op.params().dump();
  const Outcome outcome = guarded([&] { op.prepare(stream.get()); });
  EXPECT_EQ(outcome.status, PointStatus::ok) << name << ": " << outcome.reason;
  if (outcome.status != PointStatus::ok) return;
  const CheckResult result = op.check();
  std::printf("%-28s %-5s %s\n", op.op().c_str(), to_string(op.precision()), result.detail.c_str());
  EXPECT_TRUE(result.passed()) << name << ": " << result.detail;
  EXPECT_FALSE(op.algorithm().empty());
  EXPECT_TRUE(op.details().contains("norm_mode")) << op.details();
}

TEST(GpuNorm, EveryLayernormKindPhaseDirectionAndPrecisionMatchesTheReference) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (NormKind kind : kAllNormKinds)
    for (Precision precision : kNormPrecisions)
      for (NormPhase phase : kPhases)
        for (NormDirection direction : kDirections) {
          if (direction == NormDirection::bwd && phase == NormPhase::inference) continue;
          // 3 x 37 rows of 768 and 2 rows of 4096: BERT's and LLaMA's widths.
          for (const auto& [batch, seq, hidden] :
               {std::tuple{3, 37, 768}, std::tuple{2, 1, 4096}}) {
            LayernormSpec spec;
            spec.batch = batch;
            spec.seq = seq;
            spec.hidden = hidden;
            spec.kind = kind;
            spec.phase = phase;
            spec.direction = direction;
            spec.precision = precision;
            Layernorm op(spec, shared_handles());
            prepare_and_check(op, stream);
          }
        }
}

TEST(GpuNorm, EveryBatchnormPhaseDirectionAndPrecisionMatchesTheReference) {
  TR_REQUIRE_GPU();
  const Stream stream;
  for (Precision precision : kNormPrecisions)
    for (NormPhase phase : kPhases)
      for (NormDirection direction : kDirections) {
        if (direction == NormDirection::bwd && phase == NormPhase::inference) continue;
        BatchnormSpec spec;
        spec.batch = 4;
        spec.channels = 64;
        spec.height = 14;
        spec.width = 14;
        spec.phase = phase;
        spec.direction = direction;
        spec.precision = precision;
        Batchnorm op(spec, shared_handles());
        prepare_and_check(op, stream);
      }
}

TEST(GpuNorm, RunCapturesIntoACudaGraphAndReplaysBitwise) {
  TR_REQUIRE_GPU();
  const Stream stream;
  std::vector<std::unique_ptr<Operator>> ops;
  ops.push_back(make_operator(layernorm_family(),
                              {{"batch", 4},
                               {"seq", 128},
                               {"hidden", 768},
                               {"kind", "layer"},
                               {"phase", "training"},
                               {"direction", "fwd"},
                               {"precision", "fp16"}},
                              shared_handles()));
  ops.push_back(make_operator(batchnorm_family(),
                              {{"batch", 8},
                               {"channels", 256},
                               {"height", 14},
                               {"width", 14},
                               {"phase", "training"},
                               {"direction", "bwd"},
                               {"precision", "bf16"}},
                              shared_handles()));
  for (const std::unique_ptr<Operator>& op : ops) {
    const Outcome prepared = guarded([&] { op->prepare(stream.get()); });
    ASSERT_EQ(prepared.status, PointStatus::ok) << op->op() << ": " << prepared.reason;
    const DeviceTensor output = op->outputs().at(0);
    std::vector<std::byte> eager(output.bytes), replayed(output.bytes);
    op->run(stream.get());
    TR_CUDA_CHECK(cudaMemcpyAsync(eager.data(), output.data, output.bytes, cudaMemcpyDeviceToHost,
                                  stream.get()));
    TR_CUDA_CHECK(cudaMemsetAsync(output.data, 0x7f, output.bytes, stream.get()));
    const test::CapturedRun capture = test::capture_run(*op, stream.get());
    ASSERT_TRUE(test::captured_ok(capture)) << op->op();
    test::replay(capture, stream.get(), 3);
    TR_CUDA_CHECK(cudaMemcpyAsync(replayed.data(), output.data, output.bytes,
                                  cudaMemcpyDeviceToHost, stream.get()));
    TR_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    EXPECT_TRUE(replayed == eager) << op->op() << " " << op->algorithm();
  }
}

// The HBM copy roof (read + write, what a normalization does), quick.
double hbm_copy_roof() {
  CeilingRequest request;
  request.quick = true;
  request.gpu = query_gpu(0);
  request.wanted = [](const std::string& name) { return name == "hbm_copy"; };
  CeilingResults results;
  measure_memory_ceilings(request, results);
  for (const Ceiling& c : results.ceilings)
    if (c.name == "hbm_copy") return c.measured;
  return 0;
}

// Memory-bound kernels: the achieved bandwidth of large points against the roof.
TEST(GpuNorm, LargePointsReachTheHbmRoofAndTheCountersSeeTheMinimumBytes) {
  TR_REQUIRE_GPU();
  const double roof = hbm_copy_roof();
  ASSERT_GT(roof, 0);
  std::printf("hbm_copy roof (quick): %.0f GB/s\n", roof / 1e9);
  SweepRunner runner(inspect_gpu(0), RunnerOptions{});
  struct Case {
    const OperatorFamily family;
    nlohmann::json point;
  };
  const std::vector<Case> cases = {
      {layernorm_family(),
       {{"batch", 128},
        {"seq", 128},
        {"hidden", 768},
        {"kind", "layer"},
        {"phase", "training"},
        {"direction", "fwd"},
        {"precision", "fp16"}}},
      {layernorm_family(),
       {{"batch", 64},
        {"seq", 128},
        {"hidden", 4096},
        {"kind", "rms"},
        {"phase", "inference"},
        {"direction", "fwd"},
        {"precision", "bf16"}}},
      {layernorm_family(),
       {{"batch", 64},
        {"seq", 128},
        {"hidden", 4096},
        {"kind", "rms"},
        {"phase", "training"},
        {"direction", "bwd"},
        {"precision", "bf16"}}},
      {batchnorm_family(),
       {{"batch", 32},
        {"channels", 256},
        {"height", 56},
        {"width", 56},
        {"phase", "training"},
        {"direction", "fwd"},
        {"precision", "fp16"}}},
      {batchnorm_family(),
       {{"batch", 32},
        {"channels", 256},
        {"height", 56},
        {"width", 56},
        {"phase", "inference"},
        {"direction", "fwd"},
        {"precision", "fp16"}}},
      {batchnorm_family(),
       {{"batch", 32},
        {"channels", 256},
        {"height", 56},
        {"width", 56},
        {"phase", "training"},
        {"direction", "bwd"},
        {"precision", "fp16"}}},
      // The heuristic's first configuration against the fastest listed one.
      {layernorm_family(),
       {{"batch", 128},
        {"seq", 128},
        {"hidden", 768},
        {"kind", "layer"},
        {"phase", "training"},
        {"direction", "fwd"},
        {"precision", "fp16"},
        {"algorithm", "fastest"}}},
      {layernorm_family(),
       {{"batch", 64},
        {"seq", 128},
        {"hidden", 4096},
        {"kind", "rms"},
        {"phase", "inference"},
        {"direction", "fwd"},
        {"precision", "bf16"},
        {"algorithm", "fastest"}}},
  };
  for (const Case& c : cases) {
    const Point p = runner.measure_point(c.family, c.point, "test", 0);
    const std::string name = p.op + " " + c.point.dump();
    ASSERT_EQ(p.status, PointStatus::ok) << name << ": " << p.reason;
    EXPECT_EQ(p.details["check"]["status"], "passed") << name << p.details["check"];
    ASSERT_TRUE(p.timing.stream) << name;
    const double achieved = p.min_bytes / *p.timing.stream_s();
    const double dram =
        (p.counters.count("dram_read_bytes") ? p.counters.at("dram_read_bytes") : 0) +
        (p.counters.count("dram_write_bytes") ? p.counters.at("dram_write_bytes") : 0);
    std::printf(
        "%-26s %-5s %s: T_stream %.1f us, min_bytes %.3g, %.0f GB/s = %.2f of hbm_copy; "
        "DRAM bytes / min_bytes %.3f; kernels %zu; %s\n",
        p.op.c_str(), p.precision.c_str(), c.point.dump().c_str(), *p.timing.stream_s() * 1e6,
        p.min_bytes, achieved / 1e9, achieved / roof, dram / p.min_bytes, p.kernels.size(),
        p.algorithm.c_str());
    if (p.details.contains("operator") && p.details["operator"].contains("search"))
      std::printf("  search: %s\n", p.details["operator"]["search"].dump().c_str());
    // A kernel cannot move its minimum bytes faster than the roof (5% for the
    // roof's own spread). The floor catches a rate wrong by an order of magnitude
    // (min_bytes or T_stream), not the library's efficiency, which the findings
    // judge: cuDNN's LayerNorm fwd for hidden 768 moved 0.74 TB/s on an H200, 0.18
    // of its hbm_copy (4.19 TB/s); on an H100 (~3 TB/s) it passed the earlier 0.2.
    EXPECT_LT(achieved, roof * 1.05) << name;
    EXPECT_GT(achieved, roof * 0.1) << name;
  }
}

TEST(GpuNorm, TheDefaultSweepsRunThroughTheCliIntoAStore) {
  TR_REQUIRE_GPU();
  const test::TempDir dir;
  for (const char* family : {"layernorm", "batchnorm"}) {
    const std::string db = dir.file(std::string(family) + ".db");
    const auto started = std::chrono::steady_clock::now();
    const test::ToolResult r = test::run_tool({"sweep", family, "--db", db}, {}, 240);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ResultsStore store = ResultsStore::open(db, ResultsStore::Access::read_only);
    const std::vector<RunRecord> runs = store.load_all();
    ASSERT_EQ(runs.size(), 1u);
    std::size_t ok = 0, passed = 0, in_worker = 0;
    for (const Point& p : runs[0].points) {
      ok += p.status == PointStatus::ok;
      passed += p.details.contains("check") && p.details["check"]["status"] == "passed";
      // Timed away from CUPTI: the worker's choice of algorithm must be the runner's
      // (until 9cdc82a every norm point failed there and was timed in the runner).
      const nlohmann::json timing = p.details.value("timing", nlohmann::json::object());
      in_worker += timing.value("process", std::string()) == "timing worker";
      if (timing.contains("worker_failure"))
        std::printf("  timed in the runner: %s\n", timing["worker_failure"].dump().c_str());
      if (p.status != PointStatus::ok)
        std::printf("  %s %s: %s\n", p.op.c_str(), p.params.dump().c_str(), p.reason.c_str());
    }
    std::printf(
        "sweep %s: %zu points, %zu ok, %zu checks passed, %zu timed in the worker, %.1f s\n",
        family, runs[0].points.size(), ok, passed, in_worker, seconds);
    EXPECT_EQ(ok, runs[0].points.size()) << family;
    EXPECT_EQ(passed, runs[0].points.size()) << family;
    EXPECT_EQ(in_worker, runs[0].points.size()) << family;
  }
}

}  // namespace
}  // namespace timeroof
