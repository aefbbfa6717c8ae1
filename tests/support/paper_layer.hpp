// The paper's Conv2D layer, as sweep parameters and as a spec.
#pragma once

#include <nlohmann/json.hpp>

#include "sweeps/conv2d_problem.hpp"

namespace timeroof {

// 112x112x64 NHWC, 3x3x64, stride 2, same padding, fp16 with Tensor Cores; at
// batch 16 cuDNN does exactly the analytic work (seen on an H200).
inline nlohmann::json paper_point(int batch) {
  return {{"batch", batch},     {"channels", 64},  {"height", 112}, {"width", 112},
          {"filters", 64},      {"filter", 3},     {"stride", 2},   {"precision", "fp16"},
          {"direction", "fwd"}, {"layout", "nhwc"}};
}

// The same layer as a forward spec at batch 16: input 112x112x64 NHWC, 64
// filters 3x3x64, stride 2, padding 1, fp16.
inline Conv2dSpec paper_conv2d_spec() {
  Conv2dSpec spec;
  spec.layout = Layout::nhwc;
  spec.n = 16;
  spec.c = 64;
  spec.h = spec.w = 112;
  spec.k = 64;
  spec.r = spec.s = 3;
  spec.stride_h = spec.stride_w = 2;
  spec.pad_h = spec.pad_w = 1;
  spec.precision = Precision::fp16;
  return spec;
}

}  // namespace timeroof
