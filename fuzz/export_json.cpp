// Fuzz target export_json: what `import`, `analyze --from` and `report --from` read.
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/gzip.hpp"
#include "core/json_io.hpp"
#include "fuzz/entries.hpp"

namespace timeroof::fuzz {

void export_json(std::string_view data) {
  try {
    // The reader takes gzip too (`export --out FILE.gz`, the bundled samples);
    // the fuzzer's memory limit is far below the tool's inflation cap.
    constexpr std::size_t kFuzzInflateLimit = std::size_t{64} << 20;
    const std::string text =
        inflate_if_gzip(std::string(data), "fuzz.json", "pass an export file", kFuzzInflateLimit);
    const nlohmann::json doc = parse_untrusted_json(text, "fuzz.json", "pass an export file");
    const std::string first = export_document(parse_export_document(doc, "fuzz.json")).dump();
    const nlohmann::json again = parse_untrusted_json(first, "re-export", "internal");
    const std::string second = export_document(parse_export_document(again, "re-export")).dump();
    if (first != second)
      throw std::logic_error("export -> import -> export changed the document:\n" + first + "\n" +
                             second);
  } catch (const Error& error) {
    // A clean refusal, in the tool's words: the key path and what is wrong there
    // (issue 16: 610 of 1,000 fuzzed files got the JSON library's own message).
    // The words count only where the input lacks them: a parse error quotes the
    // text it last read, which may be the user's own "json.exception".
    constexpr std::string_view kLibraryWords = "json.exception";
    if (std::string_view(error.what()).find(kLibraryWords) != std::string_view::npos &&
        data.find(kLibraryWords) == std::string_view::npos)
      throw std::logic_error(std::string("the JSON library's words reached the user: ") +
                             error.what());
  }
}

}  // namespace timeroof::fuzz
