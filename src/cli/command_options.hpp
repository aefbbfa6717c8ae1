// What the commands' register functions share (CLI11): the common options, each
// added by name and bound to the one CommonOptions of the command line, and
// when_chosen, which hands main() the chosen command's run.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

#include "src/cli/commands.hpp"
#include "src/cli/devices.hpp"

namespace timeroof::cli {

inline void add_db(CLI::App& command, CommonOptions& options) {
  command.add_option("--db", options.db, "results store (SQLite)")->capture_default_str();
}

inline void add_json(CLI::App& command, CommonOptions& options) {
  command.add_flag("--json", options.json, "machine-readable JSON on stdout");
}

// The runs a reading command (analyze, report) takes: ids or uuid prefixes from
// the store, or --from export files instead; after add_db.
inline void add_run_selection(CLI::App& command, std::vector<std::string>& runs,
                              std::vector<std::string>& from) {
  command.add_option("runs", runs, "run ids or uuid prefixes (default: all)");
  command.add_option("--from", from, "read the runs from these export files, not the store")
      ->excludes(command.get_option("--db"));  // one source: --db was silently ignored
}

// A flag whose value may not be empty ("" would read as the flag not given).
inline CLI::Validator non_empty(const char* example) {
  return CLI::Validator(
      [example](const std::string& value) {
        return value.empty() ? std::string("needs a value, e.g. ") + example : std::string();
      },
      "");
}

inline void add_device(CLI::App& command, CommonOptions& options) {
  command.add_option("--device", options.device, "GPU index (see nvidia-smi)")
      ->capture_default_str()
      ->check(CLI::Validator(  // -1 is a bad flag, GPU or not
          [](const std::string& value) {
            return value.rfind('-', 0) == 0 ? "a GPU index is 0 or more (see nvidia-smi)"
                                            : std::string();
          },
          ""));
}

inline void add_out(CLI::App& command, CommonOptions& options) {
  command.add_option("--out", options.out, "output directory or file");
}

// --devices on the commands that measure: one worker process per GPU; after add_device.
inline void add_devices(CLI::App& command, CommonOptions& options, const char* what) {
  command.add_option("--devices", options.devices, what)
      ->excludes(command.get_option("--device"))  // one or the other, never both silently
      ->check(CLI::Validator(
          [](const std::string& value) {  // its form now: a bad flag, GPU or not
            try {
              (void)parse_device_list(value);
              return std::string();
            } catch (const Error& error) {
              return std::string(error.what());
            }
          },
          ""));
}

// When `command` is the one chosen, main() runs `run` once the whole command line is parsed.
inline void when_chosen(CLI::App& command, Action& action, Action run) {
  command.final_callback([&action, run = std::move(run)] { action = run; });
}

}  // namespace timeroof::cli
