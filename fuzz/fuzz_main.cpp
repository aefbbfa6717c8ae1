// One libFuzzer executable per target: TIMEROOF_FUZZ_TARGET names the entry.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  timeroof::fuzz::TIMEROOF_FUZZ_TARGET(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
