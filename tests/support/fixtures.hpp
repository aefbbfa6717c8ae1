// The bundled exports the CPU tests read (samples/, tests/fixtures/), parsed as
// `import` parses them. Header-only: the support library links no timeroof
// library; each test that includes it links timeroof_core already.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/json_io.hpp"
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

}  // namespace timeroof::test
