// The sections of the report, as blocks of the document model
// (report_document.hpp): per run a summary, the findings, the machine's roofs,
// per sweep its charts and tables, and provenance, all from one
// roofline::analyze of the run. Internal to plots/.
#pragma once

#include <string>
#include <vector>

#include "core/results.hpp"
#include "plots/report_document.hpp"

namespace timeroof::plots::detail {

// The whole document of `runs`, with `notice` (when given) as a banner at its top.
std::vector<Block> report_blocks(const std::vector<RunRecord>& runs, const std::string& notice);

}  // namespace timeroof::plots::detail
