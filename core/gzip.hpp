// gzip framing for export documents: `export --out FILE.gz` writes one, and
// everything that reads an export (import, --from, compare, the bundled samples)
// takes either form, told apart by the gzip magic, not the file name.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace timeroof {

// An export of every family is ~30 MB of JSON; a stream that inflates past this
// is refused rather than allowed to exhaust memory (a few KB of gzip can claim GBs).
inline constexpr std::size_t kMaxInflatedBytes = std::size_t{1} << 31;

// Whether `bytes` begins with the gzip magic (1f 8b).
bool is_gzip(std::string_view bytes);

// `text` as one gzip member (best compression: samples are written once, read often).
std::string gzip_compress(std::string_view text);

// The text of gzip data: one member or several concatenated, as gzip(1) writes
// them. A damaged, truncated or oversized stream is a usage error naming
// `source` and what is wrong, followed by "; " and `fix`; so is a stream that
// inflates past `max_bytes`.
std::string gzip_decompress(std::string_view bytes, const std::string& source,
                            const std::string& fix, std::size_t max_bytes = kMaxInflatedBytes);

// What every export reader does with a file's bytes: inflated when they are gzip
// (by the magic, whatever the name), else returned as they are.
std::string inflate_if_gzip(std::string bytes, const std::string& source, const std::string& fix,
                            std::size_t max_bytes = kMaxInflatedBytes);

}  // namespace timeroof
