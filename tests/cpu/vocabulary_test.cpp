// The core vocabulary: its spellings are the stored format (Point strings,
// ceiling names, counter keys), so each is pinned here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/ceiling_names.hpp"
#include "core/quantities.hpp"
#include "core/results.hpp"
#include "core/vocabulary.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof {
namespace {

using test::usage_message;

template <typename Enum, std::size_t N>
std::vector<std::string> names(const std::array<Enum, N>& all) {
  std::vector<std::string> out;
  for (Enum e : all) out.emplace_back(to_string(e));
  return out;
}

TEST(Vocabulary, SpellingsAreTheStoredOnes) {
  EXPECT_EQ(names(kAllDataTypes),
            (std::vector<std::string>{"fp64", "fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2",
                                      "int8", "int32"}));
  EXPECT_EQ(names(kAllPrecisions),
            (std::vector<std::string>{"fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"}));
  EXPECT_EQ(names(kAllPrecisionClasses),
            (std::vector<std::string>{"fp64", "fp32", "half", "tensor_fp16", "tensor_bf16",
                                      "tensor_tf32", "tensor_fp8", "tensor_int8", "tensor_fp64"}));
  EXPECT_EQ(names(kAllLevels), (std::vector<std::string>{"l1", "l2", "dram"}));
  EXPECT_EQ(names(kAllHostMemories), (std::vector<std::string>{"pinned", "pageable"}));
  EXPECT_EQ(names(kAllTransferDirections), (std::vector<std::string>{"h2d", "d2h"}));
  EXPECT_STREQ(direction_name(TransferDirection::d2h), "D2H");
  EXPECT_STREQ(to_string(MathMode::tensor), "tensor");
  EXPECT_STREQ(to_string(MathMode::fma_only), "fma_only");
  EXPECT_STREQ(to_string(RunStatus::partial), "partial");
  EXPECT_STREQ(to_string(RunStatus::interrupted), "interrupted");
  for (RunStatus s : {RunStatus::running, RunStatus::complete, RunStatus::partial,
                      RunStatus::failed, RunStatus::interrupted})
    EXPECT_EQ(find_run_status(to_string(s)), s);
}

TEST(Vocabulary, FindReadsTheSpellingsAndNothingElse) {
  for (Precision p : kAllPrecisions) EXPECT_EQ(find_precision(to_string(p)), p);
  EXPECT_EQ(find_precision("FP16"), std::nullopt);
  EXPECT_EQ(find_precision("half"), std::nullopt);
  EXPECT_EQ(find_math_mode("fma_only"), MathMode::fma_only);
  EXPECT_EQ(find_math_mode("auto"), std::nullopt);
  EXPECT_EQ(find_host_memory("pageable"), HostMemory::pageable);
  EXPECT_EQ(find_host_memory(""), std::nullopt);
}

TEST(Vocabulary, ParseNamesTheFieldAndTheAllowedValues) {
  EXPECT_EQ(parse_precision("int8"), Precision::int8);
  const std::string all = usage_message([] { parse_precision("fp4"); });
  EXPECT_MENTIONS(all, "precision: unknown value 'fp4'");
  EXPECT_MENTIONS(all, "allowed: fp64, fp32, tf32, fp16, bf16, fp8, int8");
  const Precision subset[] = {Precision::fp32, Precision::fp16};
  const std::string some = usage_message([&] { parse_precision("fp64", subset); });
  EXPECT_MENTIONS(some, "allowed: fp32, fp16");
  EXPECT_MENTIONS(usage_message([] { parse_math_mode("tensor_core"); }), "math: unknown value");
}

TEST(Vocabulary, StorageAndBytes) {
  EXPECT_EQ(storage_type(Precision::tf32), DataType::fp32);
  EXPECT_EQ(storage_type(Precision::fp8), DataType::fp8_e4m3);
  EXPECT_EQ(element_bytes(Precision::tf32), 4u);
  EXPECT_EQ(element_bytes(Precision::bf16), 2u);
  EXPECT_EQ(element_bytes(Precision::fp64), 8u);
  EXPECT_EQ(element_bytes(DataType::fp8_e5m2), 1u);
  EXPECT_EQ(element_bytes(DataType::int32), 4u);
}

TEST(Vocabulary, AnOperatorsPrecisionRunsAgainstOneRoof) {
  using P = Precision;
  using C = PrecisionClass;
  EXPECT_EQ(precision_class(P::fp16, MathMode::tensor), C::tensor_fp16);
  EXPECT_EQ(precision_class(P::fp32, MathMode::tensor), C::tensor_tf32);  // fp32 runs as tf32
  EXPECT_EQ(precision_class(P::tf32, MathMode::tensor), C::tensor_tf32);
  EXPECT_EQ(precision_class(P::int8, MathMode::tensor), C::tensor_int8);
  EXPECT_EQ(precision_class(P::fp64, MathMode::tensor), C::tensor_fp64);
  EXPECT_EQ(precision_class(P::bf16, MathMode::fma_only), C::half);
  EXPECT_EQ(precision_class(P::fp32, MathMode::fma_only), C::fp32);
  EXPECT_EQ(precision_class(P::fp64, MathMode::fma_only), C::fp64);
  EXPECT_EQ(precision_class(P::tf32, MathMode::fma_only), std::nullopt);
  EXPECT_EQ(precision_class(P::fp8, MathMode::fma_only), std::nullopt);
  EXPECT_TRUE(is_tensor(C::tensor_fp64));
  EXPECT_FALSE(is_tensor(C::half));
}

TEST(Vocabulary, APointsStringsReadTyped) {
  Point point;
  point.precision = "bf16";
  point.math_mode = "tensor";
  EXPECT_EQ(precision_of(point), Precision::bf16);
  EXPECT_EQ(math_mode_of(point), MathMode::tensor);
  point.precision = "fp4";
  EXPECT_EQ(precision_of(point), std::nullopt);

  std::string unknown = "stale";
  EXPECT_EQ(transfer_host(point, &unknown), HostMemory::pinned);  // no transfer: pinned
  EXPECT_EQ(unknown, "");
  point.details["transfer"]["host"] = "pageable";
  EXPECT_EQ(transfer_host(point), HostMemory::pageable);
  point.details["transfer"]["host"] = nullptr;
  EXPECT_EQ(transfer_host(point), HostMemory::pinned);
  point.details["transfer"]["host"] = "mapped";
  EXPECT_EQ(transfer_host(point, &unknown), HostMemory::pinned);
  EXPECT_EQ(unknown, "mapped");
}

// The one list of ceiling names, in measurement order, as the store holds them.
TEST(CeilingNames, FamiliesListEveryCeilingInMeasurementOrder) {
  std::vector<std::string> families;
  std::vector<std::string> all;
  for (const ceiling::Family& f : ceiling::families()) {
    families.emplace_back(f.name);
    all.insert(all.end(), f.names.begin(), f.names.end());
  }
  EXPECT_EQ(families, (std::vector<std::string>{"launch", "transfer", "memory", "cuda_core",
                                                "tensor", "library"}));
  EXPECT_EQ(all, (std::vector<std::string>{"launch_async",
                                           "launch_sync",
                                           "launch_graph_node",
                                           "h2d_pinned",
                                           "d2h_pinned",
                                           "h2d_pageable",
                                           "d2h_pageable",
                                           "hbm_read",
                                           "hbm_write",
                                           "hbm_copy",
                                           "l2_read",
                                           "l1_read",
                                           "shared_read",
                                           "working_set",
                                           "fp64_fma",
                                           "fp32_fma",
                                           "fp16_fma",
                                           "bf16_fma",
                                           "fp64_addmul",
                                           "fp32_addmul",
                                           "fp16_addmul",
                                           "bf16_addmul",
                                           "tensor_fp16",
                                           "tensor_bf16",
                                           "tensor_tf32",
                                           "tensor_fp8",
                                           "tensor_int8",
                                           "tensor_fp64",
                                           "tensor_fp16_mma_sync",
                                           "tensor_bf16_mma_sync",
                                           "tensor_tf32_mma_sync",
                                           "tensor_fp8_mma_sync",
                                           "tensor_int8_mma_sync",
                                           "cublaslt_fp16",
                                           "cublaslt_bf16",
                                           "cublaslt_tf32",
                                           "cublaslt_fp8",
                                           "cublaslt_int8",
                                           "cublas_fp64"}));
  EXPECT_TRUE(ceiling::families()[0].uses_host);
  EXPECT_TRUE(ceiling::families()[1].uses_host);
  EXPECT_FALSE(ceiling::families()[2].uses_host);
  EXPECT_TRUE(ceiling::is_interconnect("p2p_ce_0to1"));
  EXPECT_TRUE(ceiling::is_interconnect(ceiling::kAllreduceNccl));
  EXPECT_FALSE(ceiling::is_interconnect(ceiling::kHbmRead));
}

TEST(Quantities, WorkOfEachClassAndTheRoofItIsDividedBy) {
  EXPECT_STREQ(to_string(work_quantity(PrecisionClass::half)), "half_flops");
  EXPECT_STREQ(to_string(work_quantity(PrecisionClass::tensor_int8)), "tensor_int8_ops");
  for (PrecisionClass p : kAllPrecisionClasses) EXPECT_EQ(info(work_quantity(p)).precision, p);
  EXPECT_EQ(info(Quantity::fp64_flops).roof, "fp64_fma");
  EXPECT_EQ(info(Quantity::half_flops).roof, "fp16_fma");
  EXPECT_EQ(info(Quantity::tensor_bf16_wgmma_flops).roof, "tensor_bf16");
  EXPECT_EQ(info(Quantity::l2_bytes).roof, "l2_read");
  EXPECT_EQ(info(Quantity::duration).precision, std::nullopt);
}

}  // namespace
}  // namespace timeroof
