// core/gzip against zlib's own framing as gzip(1) writes it: the bundled samples
// are gzip files, and every export reader goes through gzip_decompress.
#include "core/gzip.hpp"

#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace timeroof {
namespace {

// Text that compresses like an export (repeated keys) but is not trivially uniform.
std::string export_like_text(std::size_t bytes) {
  std::mt19937 random(7);
  std::string text;
  while (text.size() < bytes)
    text +=
        "{\"median_s\": " + std::to_string(random() % 100000) + ", \"kernel\": \"sm90_xmma\"},\n";
  return text;
}

std::string refusal(const std::string& bytes, std::size_t limit = kMaxInflatedBytes) {
  try {
    gzip_decompress(bytes, "run.json.gz", "pass a file written by `timeroof export`", limit);
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ExitCode::usage);
    return error.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(Gzip, RoundTripIsExactAndCompresses) {
  const std::string text = export_like_text(3 << 20);  // three output chunks
  const std::string packed = gzip_compress(text);
  EXPECT_TRUE(is_gzip(packed));
  EXPECT_FALSE(is_gzip(text));
  EXPECT_LT(packed.size() * 4, text.size());
  EXPECT_EQ(gzip_decompress(packed, "x.gz", "fix"), text);
  EXPECT_EQ(gzip_decompress(gzip_compress(""), "x.gz", "fix"), "");
}

// gzip(1) writes a file of several members when files are concatenated
// (`cat a.gz b.gz`): it reads as the concatenated text.
TEST(Gzip, ConcatenatedMembersReadAsOneText) {
  EXPECT_EQ(gzip_decompress(gzip_compress("{\"a\": ") + gzip_compress("1}"), "x.gz", "fix"),
            "{\"a\": 1}");
}

// The bytes of `gzip -n` of "hello\n", written by gzip(1), not by our deflater.
TEST(Gzip, ReadsWhatGzipWrites) {
  const unsigned char by_gzip[] = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                   0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0xe7, 0x02, 0x00,
                                   0x20, 0x30, 0x3a, 0x36, 0x06, 0x00, 0x00, 0x00};
  EXPECT_EQ(gzip_decompress(std::string(reinterpret_cast<const char*>(by_gzip), sizeof by_gzip),
                            "hello.gz", "fix"),
            "hello\n");
}

TEST(Gzip, DamageIsAOneLineUsageErrorNamingTheFileAndTheFix) {
  const std::string packed = gzip_compress(export_like_text(100000));
  const std::string truncated = refusal(packed.substr(0, packed.size() / 2));
  EXPECT_NE(truncated.find("run.json.gz: the gzip data ends early"), std::string::npos)
      << truncated;
  EXPECT_NE(truncated.find("; pass a file written by `timeroof export`"), std::string::npos);
  EXPECT_EQ(truncated.find('\n'), std::string::npos);

  std::string flipped = packed;
  flipped[packed.size() / 2] = static_cast<char>(flipped[packed.size() / 2] ^ 0x55);
  EXPECT_NE(refusal(flipped).find("damaged gzip data"), std::string::npos);

  EXPECT_NE(refusal(packed + "trailing junk").find("bytes after the end"), std::string::npos);
  EXPECT_NE(refusal("\x1f\x8b").find("ends early"), std::string::npos);
}

// A few KB of gzip can claim gigabytes: past the limit the reader stops.
TEST(Gzip, InflatingPastTheLimitIsRefused) {
  const std::string bomb = gzip_compress(std::string(8 << 20, '0'));
  EXPECT_LT(bomb.size(), 20000u);
  EXPECT_NE(refusal(bomb, 4 << 20).find("inflates past 4 MiB"), std::string::npos);
  EXPECT_EQ(gzip_decompress(bomb, "x.gz", "fix", 16 << 20).size(), std::size_t{8} << 20);
}

}  // namespace
}  // namespace timeroof
