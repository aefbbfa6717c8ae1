// The paper's Conv2D layer as sweep parameters.
#pragma once

#include <nlohmann/json.hpp>

namespace timeroof {

// 112x112x64 NHWC, 3x3x64, stride 2, same padding, fp16 with Tensor Cores; at
// batch 16 cuDNN does exactly the analytic work (seen on an H200).
inline nlohmann::json paper_point(int batch) {
  return {{"batch", batch},     {"channels", 64},  {"height", 112}, {"width", 112},
          {"filters", 64},      {"filter", 3},     {"stride", 2},   {"precision", "fp16"},
          {"direction", "fwd"}, {"layout", "nhwc"}};
}

}  // namespace timeroof
