// The bundled exports the CPU tests read (samples/, tests/fixtures/), parsed as
// `import` parses them. Header-only: the support library links no timeroof
// library; each test that includes it links timeroof_core already.
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/json_io.hpp"
#include "core/trace_events.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof::test {

// The runs of the export at `relative` under the source tree ("samples/sample-run.json.gz").
inline std::vector<RunRecord> load_runs(const std::string& relative) {
  const std::string path = source_dir() + "/" + relative;
  return parse_export_document(nlohmann::json::parse(read_export_text(path)), path);
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

// `events` as `profile --api none` records them: without API and
// synchronization records.
inline std::vector<TraceEvent> without_api_records(const std::vector<TraceEvent>& events) {
  std::vector<TraceEvent> out;
  for (const TraceEvent& e : events)
    if (e.kind != TraceKind::runtime_api && e.kind != TraceKind::driver_api &&
        e.kind != TraceKind::sync)
      out.push_back(e);
  return out;
}

// One record for a test's own trace: a host record on (process, thread), a GPU
// record on device 0, stream 0 with no process or thread (as traces recorded
// before the injection library named the process of GPU work).
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

// A roof as a ceilings run stores it: measured, and where given the theoretical
// value with its source.
inline Ceiling ceiling(const std::string& name, CeilingKind kind, double measured,
                       std::optional<double> theoretical = std::nullopt) {
  Ceiling c;
  c.name = name;
  c.kind = kind;
  c.measured = measured;
  c.theoretical = theoretical;
  if (theoretical) c.theoretical_source = "peak_sustained x clock";
  return c;
}

// The roofs the profile tests judge tests/fixtures/profile-counters.jsonl on, as a
// ceilings run of "NVIDIA H100 80GB HBM3" would carry them: P_fp32 = 50
// TFLOP/s, P_tensor_fp16 = 800, B_dram = 4 TB/s, B_l2 = 10, B_l1 = 30, L = 2 us.
inline Machine profile_test_machine() {
  auto roof = [](const char* name, CeilingKind kind, const char* unit, double value) {
    Ceiling c;
    c.name = name;
    c.kind = kind;
    c.unit = unit;
    c.measured = value;
    return c;
  };
  Machine m;
  m.gpu.name = "NVIDIA H100 80GB HBM3";
  m.gpu.chip = "GH100";
  m.ceilings = {roof("fp32_fma", CeilingKind::compute, "FLOP/s", 50e12),
                roof("tensor_fp16", CeilingKind::compute, "FLOP/s", 800e12),
                roof("hbm_read", CeilingKind::bandwidth, "B/s", 4e12),
                roof("l2_read", CeilingKind::bandwidth, "B/s", 10e12),
                roof("l1_read", CeilingKind::bandwidth, "B/s", 30e12),
                roof("launch_async", CeilingKind::latency, "s", 2e-6)};
  return m;
}

}  // namespace timeroof::test
