// A model run's time against batch (roofline/model_analysis.hpp): the model's
// time T_model, its T_graph sum and its Benanza lower bound per batch, log-log.
#pragma once

#include <string>

#include "roofline/model_analysis.hpp"

namespace timeroof::plots {

// An SVG document; empty when no batch has a time.
std::string model_time_chart(const roofline::ModelAnalysis& model);

}  // namespace timeroof::plots
