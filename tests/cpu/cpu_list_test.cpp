// CPU lists as sysfs writes them (a GPU's local_cpulist), parsed and written
// back, and bad lists refused with the part named.
#include "core/cpu_list.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"

namespace timeroof {
namespace {

TEST(CpuList, ParsesRangesAndSinglesAsSysfsWritesThem) {
  EXPECT_EQ(parse_cpu_list("0-3,8\n"), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(parse_cpu_list("5"), (std::vector<int>{5}));
  EXPECT_EQ(parse_cpu_list(""), (std::vector<int>{}));
  // Unsorted and overlapping parts: ascending and distinct.
  EXPECT_EQ(parse_cpu_list("10-11,2,10"), (std::vector<int>{2, 10, 11}));
  EXPECT_EQ(parse_cpu_list("0-15,32-47").size(), 32u);
}

TEST(CpuList, WritesTheShortestForm) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(format_cpu_list({7}), "7");
  EXPECT_EQ(format_cpu_list({1, 3, 4}), "1,3-4");
  for (const char* text : {"0-15,32-47", "0,2,4", "3-4,9-12"})
    EXPECT_EQ(format_cpu_list(parse_cpu_list(text)), text);
}

TEST(CpuList, RefusesWhatIsNotAList) {
  for (const char* bad : {"a", "1-", "-3", "4-2", "1,,2", "1;2", "99999", "1-2-3"}) {
    try {
      parse_cpu_list(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::usage) << bad;
      EXPECT_NE(std::string(e.what()).find("CPU list"), std::string::npos) << e.what();
    }
  }
}

TEST(CpuList, ThisThreadMayRunSomewhereAndKeepsToWhatItHas) {
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_EQ(keep_to_cpus(cpus), "");
  EXPECT_EQ(allowed_cpus(), cpus);
}

}  // namespace
}  // namespace timeroof
