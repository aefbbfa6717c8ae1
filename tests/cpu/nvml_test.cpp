// NVML's host side without a GPU (#21): PCI addresses in NVML's and CUDA's
// spellings compare equal (the NVLink roofs match a link's far end to a GPU by
// them), and a machine without NVML answers "cannot say", never a rate.
#include <gtest/gtest.h>

#include "gpu/nvml.hpp"

namespace timeroof {
namespace {

TEST(PciAddress, NvmlAndCudaSpellingsAreTheSameGpu) {
  const auto nvml = parse_pci_address("00000000:18:00.0");
  const auto cuda = parse_pci_address("0000:18:00.0");
  ASSERT_TRUE(nvml && cuda);
  EXPECT_EQ(*nvml, *cuda);
  EXPECT_EQ(nvml->bus, 0x18u);
  const auto other = parse_pci_address("0000:2a:00.0");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->bus, 0x2au);
  EXPECT_FALSE(*other == *cuda);
  EXPECT_EQ(parse_pci_address("0001:9B:1f.3")->domain, 1u);
  EXPECT_EQ(parse_pci_address("0001:9B:1f.3")->device, 0x1fu);
}

TEST(PciAddress, AnythingElseIsNotAnAddress) {
  for (const char* text :
       {"", "18:00.0", "0000:18:00", "0000:18:00.0 trailing", "GPU-0", "x:y:z.w"})
    EXPECT_FALSE(parse_pci_address(text)) << text;
}

TEST(Nvml, WithoutTheLibraryOrTheGpuThereIsNoLinkRate) {
  const Nvml nvml;
  if (nvml.available()) {
    EXPECT_FALSE(nvml.nvlinks("ffff:ff:1f.0")) << "no GPU at that address";
  } else {
    EXPECT_FALSE(nvml.why_unavailable().empty());
    EXPECT_FALSE(nvml.nvlinks("0000:18:00.0"));
  }
}

}  // namespace
}  // namespace timeroof
