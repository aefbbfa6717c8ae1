// Plain-text views of the data model for the terminal.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/results.hpp"

namespace timeroof::cli {

// Columns of the terminal that stdout writes to: $COLUMNS where it is set, else
// the terminal's width; 0 (no limit) where stdout is a file or a pipe, so what a
// script reads keeps one row per line.
std::size_t terminal_columns();

// Help text (CLI11's, a name column then descriptions) with each line longer than
// `width` continued on lines indented to where its description starts.
std::string wrap_help(const std::string& help, std::size_t width);

// Aligned text table, each line indented by two spaces: columns left-aligned, or
// right-aligned where `right[c]`; optionally a rule under the first (header) row.
// Cells are shown through terminal_safe (core/format.hpp). Wider than `max_width`
// (0: no limit), the text columns narrow and their cells continue on the row's
// next lines, where that makes the table fit; numbers and words are never broken.
std::string text_table(const std::vector<std::vector<std::string>>& cells,
                       const std::vector<bool>& right = {}, bool rule_under_header = false,
                       std::size_t max_width = terminal_columns());

// Writes `text` to the file `out`, or to stdout when `out` is empty. Refuses,
// before writing anything, an `out` that is the same file as the store or as one
// of the command's inputs (any spelling of the path, links included): writing
// there would destroy what the command reads. `option` names the flag that gave
// `out` in that refusal.
void write_output(const std::string& out, const std::string& text,
                  const std::vector<std::string>& protected_files,
                  const std::string& option = "--out");
// The same refusal alone, for outputs written elsewhere (a report directory).
void refuse_overwriting(const std::string& out, const std::vector<std::string>& protected_files,
                        const std::string& option = "--out");

// A CSV field, quoted (RFC 4180) where it holds a comma, quote or line break.
std::string csv_field(const std::string& text);

// The output format of analyze, compare and export: --format (empty: `fallback`),
// or json with --json; a usage error where they disagree or the format is unknown.
std::string table_json_or_csv(bool json, const std::string& format,
                              const std::string& fallback = "table");

// The views below print stored names, hosts and command lines through
// terminal_safe: an imported run cannot send escape sequences to the terminal.
std::string format_gpu(const GpuInfo& gpu);
std::string format_ceilings(const std::vector<Ceiling>& ceilings);
// `position`: the run's place among those printed, from 1, which numbers a run
// read from a file (run_number).
// The run's status as the text outputs show it: a run stored as running on
// another host says that whether it still runs cannot be told from here (the
// store derives "interrupted" only on the writer's own host).
std::string shown_status(const Run& run);
std::string format_run(const RunRecord& record, std::size_t position);
std::string format_run_list(const std::vector<Run>& runs);

}  // namespace timeroof::cli
