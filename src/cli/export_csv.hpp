// The tidy CSV tables of runs (`timeroof export --format csv`; `analyze --format
// csv` prints the points table): one row per observation, one column per
// variable, for pandas and friends. Every table names its run (uuid and the number
// it is shown by) and GPU on each row, so tables of several runs and GPUs
// concatenate. Units are in the column names (_s, _bytes, _flop, _flop_per_s,
// _bytes_per_s, _flop_per_byte); integers are written as integers (data_number,
// core/format.hpp), a value not measured is an empty cell, text is written as
// stored (RFC 4180 quoting only, no escaping). The model's numbers are read from
// the one analysis of each run (roofline::RunAnalysis), never computed here.
#pragma once

#include <string>
#include <vector>

#include "core/results.hpp"
#include "roofline/analysis.hpp"
#include "roofline/profile_document.hpp"

namespace timeroof::cli {

struct CsvTable {
  std::string name;  // the file's stem: "points" -> points.csv
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// The table as CSV text: a header line, then one line per row.
std::string csv_text(const CsvTable& table);

// points: one row per point: run, GPU, sweep, seq, op, precision, math mode,
// algorithm, each parameter as its own column param_<name> (numbers stay
// numbers; empty where a point's sweep lacks it), status and reason, the
// measured times with their statistics (call_s, call_ci_low_s, ...), the
// analytic and counted work and bytes per level, intensities, achieved and
// attainable rates, the time bounds, class, efficiency, lower bound, headroom
// and the decomposition of T. `analyses[i]` is the analysis of `records[i]`.
CsvTable points_table(const std::vector<RunRecord>& records,
                      const std::vector<roofline::RunAnalysis>& analyses);
// kernels: one row per kernel of every point: name, grid and block (x, y, z),
// traced duration, and where every kernel of the point has counters the model's
// per-kernel bound (work, bytes and time per level, t_bound_s, limiting).
CsvTable kernels_table(const std::vector<RunRecord>& records,
                       const std::vector<roofline::RunAnalysis>& analyses);
// kernel_counters: one row per kernel and counter (long form): run_uuid, run_id,
// sweep, seq and kernel_index (the key of kernels.csv), metric, value.
CsvTable kernel_counters_table(const std::vector<RunRecord>& records);
// ceilings: one row per roof of each run: name, kind, unit, measured,
// theoretical and its source, method, repeats, spread, clocks, power, sustained.
CsvTable ceilings_table(const std::vector<RunRecord>& records);

// profile (`analyze --format csv` of profile runs): one row per subject and
// quantity (long form): the run's columns, kind ("kernel", "range", "program"),
// subject (the kernel's name, the range's path; empty for the program),
// process_id and thread_id (ranges), class (where judged against roofs),
// quantity (roofline/profile_document.hpp's names, units in them) and value.
// `analyses[i]` is the analysis of `records[i]`.
CsvTable profile_table(const std::vector<RunRecord>& records,
                       const std::vector<roofline::ProfileAnalysis>& analyses);

// model_layers: one row per layer and batch of each model run (`run --model`,
// roofline/model_analysis.hpp): model, batch, layer, family, type, count, status,
// the per-call times, lower bound, headroom and class, count x time and bound,
// the gap, and the batch's model time, bound and headroom.
CsvTable model_layers_table(const std::vector<RunRecord>& records,
                            const std::vector<roofline::RunAnalysis>& analyses);

// Every table above but profile, in that order; model_layers only where a run is a
// model run.
std::vector<CsvTable> export_tables(const std::vector<RunRecord>& records,
                                    const std::vector<roofline::RunAnalysis>& analyses);

}  // namespace timeroof::cli
