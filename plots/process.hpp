// Running other programs (rsvg-convert, for the report's PNG and PDF charts):
// found on PATH, started with posix_spawn, their output discarded. Internal to
// plots/.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace timeroof::plots::detail {

// The absolute path of `program` in a directory of $PATH, or empty.
std::string find_on_path(const std::string& program);

// Starts argv (argv[0] a path) with stdout and stderr discarded; its pid, or -1.
pid_t spawn_silent(const std::vector<std::string>& argv);

// Runs argv (argv[0] a path) with stdout discarded; returns its exit code (-1:
// could not start or was killed) and the first line it wrote to stderr.
std::pair<int, std::string> run_quietly(const std::vector<std::string>& argv);

// Runs every command, at most `jobs` at a time, output discarded; the indices of
// those that could not start or did not exit 0, in the order they finished.
std::vector<std::size_t> run_all_silent(const std::vector<std::vector<std::string>>& commands,
                                        std::size_t jobs);

}  // namespace timeroof::plots::detail
