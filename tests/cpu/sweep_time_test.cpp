// src/cli/sweep_time.hpp: a sweep's time by runner step, from its points' details.
#include "src/cli/sweep_time.hpp"

#include <gtest/gtest.h>

namespace timeroof::cli {
namespace {

Point point_with(double timing, double counters, int batch_size) {
  Point p;
  p.details = {{"runner_seconds",
                {{"timing", timing},
                 {"counters", counters},
                 {"trace", 0.1},
                 {"check", 0.05},
                 {"prepare", 0.2}}},
               {"counters", {{"batch_size", batch_size}, {"passes", 2}}}};
  return p;
}

TEST(SweepTime, StepsAddUpAndCollectionsCountOncePerBatch) {
  SweepTime time;
  // A batch of three points and one alone: two collections.
  for (int i = 0; i < 3; ++i) time.add(point_with(1.0, 0.3, 3));
  time.add(point_with(2.0, 0.4, 1));
  EXPECT_EQ(time.points, 4);
  EXPECT_DOUBLE_EQ(time.timing_s, 5.0);
  EXPECT_DOUBLE_EQ(time.counters_s, 1.3);
  EXPECT_NEAR(time.trace_s, 0.4, 1e-12);
  EXPECT_NEAR(time.check_s, 0.2, 1e-12);
  EXPECT_NEAR(time.prepare_s, 0.8, 1e-12);
  EXPECT_NEAR(time.collections, 2.0, 1e-12);
  EXPECT_EQ(sweep_time_text(time, 10.0),
            "timing 5.0 s, counters 1.3 s (2 collections), trace 400 ms, checks 200 ms, set-up "
            "800 ms, other 2.3 s");
}

TEST(SweepTime, PointsWithoutDetailsCountButAddNoTime) {
  SweepTime time;
  EXPECT_EQ(sweep_time_text(time, 5.0), "") << "nothing measured, nothing said";
  Point failed;  // a point that failed before any step: no details
  time.add(failed);
  Point odd;
  odd.details = {{"runner_seconds", {{"timing", "fast"}}}, {"counters", {{"batch_size", 0}}}};
  time.add(odd);
  EXPECT_EQ(time.points, 2);
  EXPECT_EQ(time.steps_s(), 0.0);
  EXPECT_EQ(time.collections, 0.0);
  // Steps summing past the worker time (clock granularity) leave no negative rest.
  time.add(point_with(3.0, 0.0, 1));
  EXPECT_NE(sweep_time_text(time, 1.0).find("(1 collection)"), std::string::npos);
  EXPECT_NE(sweep_time_text(time, 1.0).find("other 0.0 us"), std::string::npos);
}

}  // namespace
}  // namespace timeroof::cli
