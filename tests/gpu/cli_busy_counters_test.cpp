// GPU tier: three sweeps started together on one GPU (issue 16 item 11). Once,
// two of them got CUPTI_ERROR_HARDWARE_BUSY from the counter probe, stored every
// point as counters_unavailable and said `complete`, exit 0. Now each either
// waits for the counters and gets them, or keeps its timing, says why on every
// such point, and ends `partial` with exit code 3.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/gpu/gpu_test_support.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

TEST(CliBusyCounters, SweepsStartedTogetherWaitForTheCountersOrEndPartialSayingWhy) {
  TR_REQUIRE_GPU();
  test::TempDir dir;
  constexpr int kSweeps = 3;
  std::vector<test::ToolResult> results(kSweeps);
  std::vector<std::thread> threads;
  for (int i = 0; i < kSweeps; ++i) {
    threads.emplace_back([&, i] {
      results[static_cast<std::size_t>(i)] = test::run_tool(
          {"sweep", "conv2d", "--batch", "1..1024:x2", "--direction", "fwd,bwd_data,bwd_filter",
           "--precision", "fp16", "--db", dir.file("s" + std::to_string(i) + ".db")});
    });
  }
  for (std::thread& t : threads) t.join();
  int waited = 0;
  for (int i = 0; i < kSweeps; ++i) {
    const test::ToolResult& r = results[static_cast<std::size_t>(i)];
    waited += r.err.find("waiting up to") != std::string::npos;
    const test::ToolResult exported =
        test::run_tool({"export", "--db", dir.file("s" + std::to_string(i) + ".db")});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const nlohmann::json run = nlohmann::json::parse(exported.out)["runs"][0];
    int timing_only = 0;
    for (const auto& point : run["points"]) {
      if (point["status"] != "counters_unavailable") {
        EXPECT_EQ(point["status"], "ok") << point["reason"];
        continue;
      }
      ++timing_only;
      EXPECT_NE(point["reason"].get<std::string>().find("another process"), std::string::npos)
          << point["reason"];
      EXPECT_TRUE(point["timing"]["graph"].is_object()) << "the point keeps its timing";
    }
    std::printf("sweep %d: exit %d, %d of %zu points timing-only, run %s\n", i, r.exit_code,
                timing_only, run["points"].size(), run["status"].get<std::string>().c_str());
    // What it said about the counters: the waits, and any point that failed.
    std::istringstream said(r.err);
    for (std::string line; std::getline(said, line);)
      if (line.find("counters") != std::string::npos || line.find("not ok") != std::string::npos)
        std::printf("  %s\n", line.c_str());
    EXPECT_EQ(run["points"].size(), 33u);
    if (timing_only == 0) {
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(run["status"], "complete");
    } else {
      EXPECT_EQ(r.exit_code, 3) << r.err;
      EXPECT_EQ(run["status"], "partial");
      EXPECT_NE(r.err.find("no counters"), std::string::npos) << r.err;
    }
  }
  std::printf("%d sweep(s) waited for the counters\n", waited);
}

}  // namespace
}  // namespace timeroof
