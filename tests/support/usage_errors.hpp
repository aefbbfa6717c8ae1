// Checks of the one-line usage errors that bad input gets.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace timeroof::test {

// The message of the usage error `body` throws ("" when it throws none).
template <typename Body>
std::string usage_message(Body body) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ExitCode::usage) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

}  // namespace timeroof::test

#define EXPECT_MENTIONS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)
