// Replays the fuzz targets' seed corpora and every input a fuzz run found
// (fuzz/corpus/<target>, fuzz/regressions/<target>) through the targets' own entry
// functions, in every build: each input is parsed or refused with a timeroof::Error,
// and nothing else escapes. Under the sanitizer build (TIMEROOF_SANITIZE) a memory
// error or undefined behaviour on one of them fails the test too.
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/entries.hpp"

namespace timeroof {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs(const std::string& target, const char* folder) {
  std::vector<fs::path> files;
  const fs::path dir = fs::path(TIMEROOF_SOURCE_DIR) / "fuzz" / folder / target;
  if (!fs::is_directory(dir)) return files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void replay(const std::string& target) {
  const std::vector<std::string> built = fuzz::targets();
  if (std::find(built.begin(), built.end(), target) == built.end())
    GTEST_SKIP() << "fuzz target " << target
                 << " is not in this build (no CUDA toolkit or cuDNN headers)";
  std::size_t count = 0;
  for (const char* folder : {"corpus", "regressions"})
    for (const fs::path& file : inputs(target, folder)) {
      ++count;
      try {
        fuzz::run(target, read(file));
      } catch (const std::exception& error) {
        ADD_FAILURE() << file << ": " << error.what();
      }
    }
  EXPECT_GT(count, 0u) << "no inputs under fuzz/corpus/" << target;
}

TEST(FuzzRegression, ValueList) {
  replay("value_list");
}
TEST(FuzzRegression, TomlSpec) {
  replay("toml_spec");
}
TEST(FuzzRegression, ExportJson) {
  replay("export_json");
}

}  // namespace
}  // namespace timeroof
