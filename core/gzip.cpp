#include "core/gzip.hpp"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "core/error.hpp"

namespace timeroof {
namespace {

// zlib's windowBits: 15 (the largest window), +16 to write a gzip header and
// trailer, +32 to read either gzip or zlib framing.
constexpr int kWriteGzip = 15 + 16;
constexpr int kReadGzip = 15 + 32;
constexpr std::size_t kChunk = std::size_t{1} << 20;

// One z_stream, freed however the work ends.
class Deflater {
 public:
  Deflater() {
    if (deflateInit2(&stream_, Z_BEST_COMPRESSION, Z_DEFLATED, kWriteGzip, 9, Z_DEFAULT_STRATEGY) !=
        Z_OK)
      throw std::runtime_error("deflateInit2 failed: out of memory");
  }
  ~Deflater() { deflateEnd(&stream_); }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  z_stream* get() { return &stream_; }

 private:
  z_stream stream_{};
};

class Inflater {
 public:
  Inflater() {
    if (inflateInit2(&stream_, kReadGzip) != Z_OK)
      throw std::runtime_error("inflateInit2 failed: out of memory");
  }
  ~Inflater() { inflateEnd(&stream_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  z_stream* get() { return &stream_; }

 private:
  z_stream stream_{};
};

// zlib counts in uInt: feed a large input in pieces.
uInt next_piece(std::size_t remaining) {
  return static_cast<uInt>(std::min<std::size_t>(remaining, std::numeric_limits<uInt>::max()));
}

}  // namespace

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gzip_compress(std::string_view text) {
  Deflater deflater;
  z_stream* stream = deflater.get();
  std::string out;
  std::size_t consumed = 0;
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (stream->avail_in == 0 && consumed < text.size()) {
      stream->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data() + consumed));
      stream->avail_in = next_piece(text.size() - consumed);
      consumed += stream->avail_in;
    }
    const std::size_t before = out.size();
    out.resize(before + kChunk);
    stream->next_out = reinterpret_cast<Bytef*>(out.data() + before);
    stream->avail_out = static_cast<uInt>(kChunk);
    status = deflate(stream, consumed == text.size() ? Z_FINISH : Z_NO_FLUSH);
    out.resize(before + kChunk - stream->avail_out);
    if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR)
      throw std::runtime_error("deflate failed with zlib status " + std::to_string(status));
  }
  return out;
}

std::string gzip_decompress(std::string_view bytes, const std::string& source,
                            const std::string& fix, std::size_t max_bytes) {
  auto refuse = [&](const std::string& what) {
    return usage_error(source + ": " + what + "; " + fix);
  };
  Inflater inflater;
  z_stream* stream = inflater.get();
  std::string out;
  std::size_t consumed = 0;
  bool member_open = false;
  while (true) {
    if (stream->avail_in == 0) {
      if (consumed == bytes.size()) break;
      stream->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + consumed));
      stream->avail_in = next_piece(bytes.size() - consumed);
      consumed += stream->avail_in;
    }
    if (out.size() >= max_bytes)
      throw refuse("the gzip data inflates past " + std::to_string(max_bytes >> 20) +
                   " MiB, more than any export");
    const std::size_t before = out.size();
    out.resize(before + kChunk);
    stream->next_out = reinterpret_cast<Bytef*>(out.data() + before);
    stream->avail_out = static_cast<uInt>(kChunk);
    member_open = true;
    const int status = inflate(stream, Z_NO_FLUSH);
    out.resize(before + kChunk - stream->avail_out);
    if (status == Z_STREAM_END) {
      member_open = false;
      // gzip(1) concatenates members; anything else after a member is damage.
      const std::size_t rest = stream->avail_in + (bytes.size() - consumed);
      if (rest == 0) break;
      if (!is_gzip(bytes.substr(bytes.size() - rest)))
        throw refuse("bytes after the end of the gzip data (the file is damaged)");
      inflateReset(stream);
      continue;
    }
    if (status == Z_NEED_DICT || status == Z_DATA_ERROR)
      throw refuse("damaged gzip data (" +
                   std::string(stream->msg != nullptr ? stream->msg : "bad data") + ")");
    if (status == Z_MEM_ERROR) throw std::runtime_error("inflate: out of memory");
    if (status == Z_BUF_ERROR && stream->avail_in == 0 && consumed == bytes.size()) break;
  }
  if (member_open) throw refuse("the gzip data ends early (the file is truncated)");
  return out;
}

std::string inflate_if_gzip(std::string bytes, const std::string& source, const std::string& fix,
                            std::size_t max_bytes) {
  return is_gzip(bytes) ? gzip_decompress(bytes, source, fix, max_bytes) : bytes;
}

}  // namespace timeroof
