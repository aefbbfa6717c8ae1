// Plain-text views of the data model for the terminal.
#pragma once

#include <string>
#include <vector>

#include "core/results.hpp"

namespace timeroof::cli {

std::string format_gpu(const GpuInfo& gpu);
std::string format_ceilings(const std::vector<Ceiling>& ceilings);
std::string format_run(const RunRecord& record);
std::string format_run_list(const std::vector<Run>& runs);

}  // namespace timeroof::cli
