// Runs the timeroof binary as a user would and captures what it printed; and
// the file and text helpers the tests share.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace timeroof::test {

struct ToolResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv[0] (a path) with the rest as arguments. `env` entries are NAME=VALUE
// pairs added to (or replacing in) the environment. A process still running
// after `limit_seconds` (0: no limit) is killed (exit code 128 + SIGKILL = 137):
// a hang fails the test instead of stalling it.
ToolResult run_process(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& env = {},
                       int limit_seconds = 0);
// Runs the timeroof binary under test with `args`.
ToolResult run_tool(const std::vector<std::string>& args,
                    const std::vector<std::pair<std::string, std::string>>& env = {},
                    int limit_seconds = 0);

// A fresh directory under the system temp dir, removed with the object.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The binary and the source tree under test: compiled-in paths, overridable by
// TIMEROOF_TEST_BINARY / TIMEROOF_TEST_SOURCE_DIR where binaries built elsewhere
// run on another machine (the device runner).
std::string tool_binary();
std::string source_dir();

std::string read_file(const std::string& path);
// An export's JSON text, inflated where the file is gzip (the bundled samples are).
std::string read_export_text(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);
int count_lines(const std::string& text);
// How often `needle` stands in `text`, not overlapping.
std::size_t count_occurrences(const std::string& text, const std::string& needle);

}  // namespace timeroof::test
