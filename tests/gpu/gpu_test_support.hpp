// Skips a GPU-tier test, visibly and with the reason, where there is no GPU.
#pragma once

#include <gtest/gtest.h>

#include "gpu/device.hpp"

#define TR_REQUIRE_GPU()                                                      \
  do {                                                                        \
    const ::timeroof::GpuCount tr_gpus_ = ::timeroof::count_gpus();           \
    if (tr_gpus_.count == 0) GTEST_SKIP() << "no GPU: " << tr_gpus_.why_none; \
    ::timeroof::select_gpu(0);                                                \
  } while (0)
