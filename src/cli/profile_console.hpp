// `timeroof analyze` of a profile run (issue 17), as text for the terminal: the
// summary line, then each table of plots/profile_report.hpp (top kernels,
// copies, API calls, the NVTX range tree per thread indented by level, where
// each iteration's time goes) through text_table. The CLI wiring (reading a
// stored profile run) comes with the store's trace table.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace_events.hpp"
#include "roofline/profile_analysis.hpp"
#include "src/cli/console.hpp"

namespace timeroof::cli {

// The text of one analysis; `provenance.command_line`, where present, names the run.
std::string profile_text(const roofline::ProfileAnalysis& analysis,
                         const nlohmann::json& provenance,
                         std::size_t max_width = terminal_columns());
// The same from the trace (analyzed here, once).
std::string profile_text(const std::vector<TraceEvent>& events, const nlohmann::json& provenance,
                         std::size_t max_width = terminal_columns());

}  // namespace timeroof::cli
