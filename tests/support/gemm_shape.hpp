// A GemmSpec of one shape, for the GEMM tests of both tiers (the rest at its
// defaults: TN, heuristic algorithm).
#pragma once

#include <cstdint>

#include "sweeps/gemm_problem.hpp"

namespace timeroof::test {

inline GemmSpec gemm_shape(std::int64_t m, std::int64_t n, std::int64_t k, GemmInputs inputs,
                           std::int64_t batch = 1, GemmEpilogue epilogue = GemmEpilogue::none) {
  GemmSpec spec;
  spec.m = m;
  spec.n = n;
  spec.k = k;
  spec.batch = batch;
  spec.inputs = inputs;
  spec.epilogue = epilogue;
  return spec;
}

}  // namespace timeroof::test
