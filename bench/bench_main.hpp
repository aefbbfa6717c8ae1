// The main() every bench program shares: its body runs under one catch that
// prints the program's name and the error's one-line message, and exits with
// the error's code.
#pragma once

#include <cstdio>

#include "core/error.hpp"

namespace timeroof {

template <typename Body>
int bench_main(const char* program, Body body, int argc, char** argv) {
  try {
    return body(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return static_cast<int>(e.code());
  }
}

}  // namespace timeroof
