// Reading the journals of `timeroof profile`: the injection library
// (inject/injection.cpp) appends one TraceEvent per line to
// DIR/journal-<pid>.jsonl, one file per traced process, while the program runs.
// The reader takes what is new since its last call, whole lines only, so the
// CLI can store records as they come; at exit each process also leaves the list
// of CUDA libraries it loaded. Pure file reading, no CUDA.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/trace_events.hpp"

namespace timeroof::cli {

class JournalReader {
 public:
  explicit JournalReader(std::string directory) : directory_(std::move(directory)) {}

  // The records of every journal's lines completed since the last call, file
  // by file (files in name order, lines in file order). `final`: the program
  // has exited; a last line without its newline is read too, and counted as
  // truncated when it does not parse (the program was killed mid-write).
  // A line that does not parse is skipped and counted; the first such line is
  // kept in first_problem() as "FILE:LINE: what is wrong".
  std::vector<TraceEvent> read_new(bool final = false);

  std::uint64_t bad_lines() const noexcept { return bad_lines_; }
  std::uint64_t truncated_lines() const noexcept { return truncated_lines_; }
  const std::string& first_problem() const noexcept { return first_problem_; }
  // Journal files seen so far: one per process that used CUDA.
  std::size_t journals() const noexcept { return files_.size(); }
  // One line for the user about the skipped lines; empty when there were none.
  std::string problems_summary() const;

 private:
  struct FileState {
    std::uint64_t offset = 0;  // bytes consumed
    std::uint64_t lines = 0;   // lines consumed
    std::string partial;       // read, but its newline not yet
  };
  void read_file(const std::string& path, FileState& state, bool final,
                 std::vector<TraceEvent>& out);
  void parse_line(const std::string& path, std::uint64_t line_number, const std::string& line,
                  bool last_unterminated, std::vector<TraceEvent>& out);

  std::string directory_;
  std::map<std::string, FileState> files_;
  std::uint64_t bad_lines_ = 0;
  std::uint64_t truncated_lines_ = 0;
  std::string first_problem_;
};

// The CUDA libraries each traced process had loaded at its exit, from the
// injection library's DIR/libraries-<pid>.json files (file-name order). A file
// that does not parse is skipped and named in `problems` as "FILE: what is wrong";
// a process killed before its exit wrote none.
struct LoadedLibraries {
  std::vector<LoadedLibrary> libraries;
  std::vector<std::string> problems;
};
LoadedLibraries read_loaded_libraries(const std::string& directory);

}  // namespace timeroof::cli
