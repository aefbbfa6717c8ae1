#include "src/cli/profile_journal.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/json_io.hpp"

namespace timeroof::cli {

namespace {

// The files in `directory` named PREFIX...SUFFIX, in name order; none where the
// directory cannot be read.
std::vector<std::string> files_named(const std::string& directory, std::string_view prefix,
                                     std::string_view suffix) {
  namespace fs = std::filesystem;
  std::vector<std::string> paths;
  std::error_code error;
  for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(prefix) && name.ends_with(suffix)) paths.push_back(it->path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace

std::vector<TraceEvent> JournalReader::read_new(bool final) {
  std::vector<TraceEvent> events;
  for (const std::string& path : files_named(directory_, "journal-", ".jsonl"))
    read_file(path, files_[path], final, events);
  return events;
}

LoadedLibraries read_loaded_libraries(const std::string& directory) {
  LoadedLibraries loaded;
  for (const std::string& path : files_named(directory, "libraries-", ".json")) {
    try {
      std::ifstream file(path, std::ios::binary);
      const nlohmann::json value = parse_untrusted_json(file, path, "the file is skipped");
      auto libraries = value.get<std::vector<LoadedLibrary>>();
      loaded.libraries.insert(loaded.libraries.end(), libraries.begin(), libraries.end());
    } catch (const std::exception& e) {
      loaded.problems.push_back(path + ": " + e.what());
    }
  }
  return loaded;
}

void JournalReader::read_file(const std::string& path, FileState& state, bool final,
                              std::vector<TraceEvent>& out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return;  // removed under us: nothing new
  file.seekg(static_cast<std::streamoff>(state.offset));
  std::string chunk((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  state.offset += chunk.size();
  state.partial += chunk;
  std::size_t begin = 0;
  for (std::size_t newline; (newline = state.partial.find('\n', begin)) != std::string::npos;
       begin = newline + 1) {
    parse_line(path, ++state.lines, state.partial.substr(begin, newline - begin), false, out);
  }
  state.partial.erase(0, begin);
  if (final && !state.partial.empty()) {
    parse_line(path, ++state.lines, state.partial, true, out);
    state.partial.clear();
  }
}

void JournalReader::parse_line(const std::string& path, std::uint64_t line_number,
                               const std::string& line, bool last_unterminated,
                               std::vector<TraceEvent>& out) {
  if (line.empty()) return;
  const std::string where = path + ":" + std::to_string(line_number);
  std::string problem;
  try {
    const nlohmann::json value = parse_untrusted_json(line, where, "the line is skipped");
    try {
      out.push_back(value.get<TraceEvent>());
      return;
    } catch (const Error& e) {  // a field, by its key
      problem = where + ": " + e.what();
    } catch (const nlohmann::json::exception& e) {  // not an object at all
      problem = where + ": " + json_error_text(e);
    }
  } catch (const Error& e) {  // not JSON; names `where` itself
    problem = e.what();
  }
  if (first_problem_.empty()) first_problem_ = problem;
  if (last_unterminated)
    ++truncated_lines_;
  else
    ++bad_lines_;
}

std::string JournalReader::problems_summary() const {
  if (bad_lines_ == 0 && truncated_lines_ == 0) return {};
  std::string text = "skipped ";
  if (bad_lines_ > 0) text += std::to_string(bad_lines_) + " journal line(s) that do not parse";
  if (truncated_lines_ > 0)
    text += std::string(bad_lines_ > 0 ? " and " : "") + std::to_string(truncated_lines_) +
            " cut-off last line(s) of a killed process";
  return text + " (first: " + first_problem_ + ")";
}

}  // namespace timeroof::cli
