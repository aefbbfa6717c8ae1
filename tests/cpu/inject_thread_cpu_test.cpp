// Where a traced process's CPU went, per thread (the injection library's diagnostic
// TIMEROOF_PROFILE_CPU=1, issue 17): /proc stat lines parsed, names with spaces and
// parentheses kept, this process's own threads read, the summary ordered.
#include "inject/thread_cpu.hpp"

#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace timeroof::inject {
namespace {

TEST(ThreadCpu, ParsesAStatLine) {
  // A real line's shape (Linux 6.x), utime 1234 and stime 56.
  const auto stat = parse_task_stat(
      "4242 (python3) S 4200 4242 4200 34816 4242 4194304 9075 0 12 0 1234 56 0 0 20 0 9 0 "
      "123456 1234567890 12345 18446744073709551615 1 1 0 0 0 0 0 16781312 17642 0 0 0 17 8");
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->name, "python3");
  EXPECT_EQ(stat->cpu_ticks, 1290U);
  const auto odd = parse_task_stat("17 (a (b) c) R 1 1 1 0 -1 0 0 0 0 0 7 3 0 0");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->name, "a (b) c");
  EXPECT_EQ(odd->cpu_ticks, 10U);
  EXPECT_FALSE(parse_task_stat(""));
  EXPECT_FALSE(parse_task_stat("17 (cut) R 1 1 1 0 -1 0 0 0 0 0 7"));
  EXPECT_FALSE(parse_task_stat("17 (bad) R 1 1 1 0 -1 0 0 0 0 0 7x 3 0 0"));
}

double this_thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

TEST(ThreadCpu, ReadsThisProcesssThreads) {
  // A named thread spins until it has used 0.2 s of CPU (however loaded the machine),
  // then on until read.
  std::atomic<bool> spun{false}, stop{false};
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::thread busy([&] {
    pthread_setname_np(pthread_self(), "tr-test-busy");
    while (!stop.load() && std::chrono::steady_clock::now() < until)
      if (this_thread_cpu_seconds() >= 0.2) spun = true;
  });
  while (!spun.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::vector<ThreadCpu> threads = threads_cpu();
  stop = true;
  busy.join();
  const auto main_thread = static_cast<std::uint32_t>(getpid());
  ASSERT_GE(threads.size(), 2U);
  const auto named = std::find_if(threads.begin(), threads.end(),
                                  [](const ThreadCpu& t) { return t.name == "tr-test-busy"; });
  ASSERT_NE(named, threads.end());
  EXPECT_GT(named->seconds, 0.1);  // 0.2 s, in the kernel's coarser ticks
  EXPECT_NE(named->thread_id, main_thread);
  EXPECT_NE(std::find_if(threads.begin(), threads.end(),
                         [&](const ThreadCpu& t) { return t.thread_id == main_thread; }),
            threads.end());
}

TEST(ThreadCpu, SummaryMostFirstWithSmallThreadsSummed) {
  const std::vector<ThreadCpu> threads = {{"cuda-EvtHandlr", 12, 0.004},
                                          {"python3", 10, 10.523},
                                          {"tr-writer", 11, 2.306},
                                          {"tr-flusher", 13, 0.001},
                                          {"idle", 14, 0.0}};
  EXPECT_EQ(describe_threads_cpu(threads, 10),
            "python3 (main) 10.52 s, tr-writer 2.31 s, 3 others 0.01 s");
  EXPECT_EQ(describe_threads_cpu({{"python3", 10, 0.0}}, 10), "python3 (main) 0.00 s");
  EXPECT_EQ(describe_threads_cpu({{"python3", 10, 1.0}, {"x", 11, 0.0}}, 10),
            "python3 (main) 1.00 s, 1 other 0.00 s");
  EXPECT_EQ(describe_threads_cpu({}, 10), "");
}

}  // namespace
}  // namespace timeroof::inject
