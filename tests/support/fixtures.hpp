// The bundled exports the CPU tests read (samples/, tests/fixtures/), parsed as
// `import` parses them. Header-only: the support library links no timeroof
// library; each test that includes it links timeroof_core already.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/json_io.hpp"
#include "core/trace_events.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof::test {

// The runs of the export at `relative` under the source tree ("samples/sample-run.json").
inline std::vector<RunRecord> load_runs(const std::string& relative) {
  const std::string path = source_dir() + "/" + relative;
  return parse_export_document(nlohmann::json::parse(read_file(path)), path);
}

// Its one run (a test failure where it holds another number).
inline RunRecord load_run(const std::string& relative) {
  std::vector<RunRecord> runs = load_runs(relative);
  EXPECT_EQ(runs.size(), 1u) << relative;
  return runs.at(0);
}

// The trace at `relative` in the journal's form: one TraceEvent as JSON a line.
inline std::vector<TraceEvent> load_trace(const std::string& relative) {
  std::istringstream lines(read_file(source_dir() + "/" + relative));
  std::vector<TraceEvent> out;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line).get<TraceEvent>());
  return out;
}

// One record for a test's own trace: a host record on (process, thread), a GPU
// record on device 0, stream 0 (no process or thread, as CUPTI gives them).
inline TraceEvent trace_event(TraceKind kind, const std::string& name, std::uint64_t start,
                              std::uint64_t end, std::uint32_t correlation = 0,
                              std::uint32_t process = 1, std::uint32_t thread = 1) {
  const bool host = !on_gpu(kind);
  return {.kind = kind,
          .name = name,
          .start_ns = start,
          .end_ns = end,
          .correlation_id = correlation,
          .process_id = host ? process : 0,
          .thread_id = host ? thread : 0};
}

}  // namespace timeroof::test
