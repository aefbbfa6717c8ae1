// Checks every operator family's CPU test makes the same way: its axes' keys
// (each with one line of help for `sweep --help`) and the usage error its
// problem() gives for a bad point. Header-only; the tests link timeroof_problems.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sweeps/family.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof::test {

// The family's axis keys in order; a failure for each axis without one line of help.
inline std::vector<std::string> checked_axis_keys(const OperatorFamily& family) {
  std::vector<std::string> keys;
  for (const ParamAxis& axis : family.axes) {
    keys.push_back(axis.key);
    EXPECT_FALSE(axis.help.empty()) << family.name << " " << axis.key;
    EXPECT_EQ(axis.help.find('\n'), std::string::npos) << family.name << " " << axis.key;
  }
  return keys;
}

// The message of the usage error the family `family` refuses `point` with.
inline std::string problem_error(const std::string& family, const nlohmann::json& point) {
  return usage_message([&] { (void)find_family(family).problem(point); });
}

}  // namespace timeroof::test
