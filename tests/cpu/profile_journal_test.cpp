// The journals of `timeroof profile` (issue 17): whole lines are read as they
// come, a line still being written waits for its newline, garbage lines are
// skipped and counted with their file and line, and a killed process's cut-off
// last line is tolerated at the end.
#include "src/cli/profile_journal.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/run_tool.hpp"

namespace timeroof::cli {
namespace {

std::string line_of(const std::string& name, std::uint64_t start) {
  TraceEvent e;
  e.kind = TraceKind::kernel;
  e.name = name;
  e.start_ns = start;
  e.end_ns = start + 10;
  return nlohmann::json(e).dump() + "\n";
}

void append(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::app) << bytes;
}

TEST(ProfileJournal, ReadsWholeLinesAsTheyCome) {
  test::TempDir dir;
  JournalReader reader(dir.path());
  EXPECT_TRUE(reader.read_new().empty());  // no journal yet
  const std::string journal = dir.file("journal-100.jsonl");
  const std::string second = line_of("b", 20);
  append(journal, line_of("a", 10) + second.substr(0, 7));  // b is half written
  auto events = reader.read_new();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].name, "a");
  append(journal, second.substr(7));
  events = reader.read_new();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].name, "b");
  EXPECT_EQ(events[0].end_ns, 30U);
  EXPECT_TRUE(reader.read_new(true).empty());
  EXPECT_EQ(reader.bad_lines(), 0U);
  EXPECT_EQ(reader.truncated_lines(), 0U);
  EXPECT_EQ(reader.problems_summary(), "");
}

TEST(ProfileJournal, OneJournalPerProcess) {
  test::TempDir dir;
  append(dir.file("journal-7.jsonl"), line_of("parent", 1));
  append(dir.file("journal-8.jsonl"), line_of("child", 2));
  append(dir.file("notes.txt"), "not a journal\n");
  JournalReader reader(dir.path());
  const auto events = reader.read_new(true);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].name, "parent");
  EXPECT_EQ(events[1].name, "child");
  EXPECT_EQ(reader.journals(), 2U);
}

TEST(ProfileJournal, GarbageLinesAreSkippedCountedAndNamed) {
  test::TempDir dir;
  const std::string journal = dir.file("journal-5.jsonl");
  append(journal, line_of("a", 1) + "{not json\n" +
                      R"({"kind": "kernel"})"
                      "\n" +
                      R"({"kind":"kernel","name":"x","start_ns":"soon","end_ns":1,"device":0,)"
                      R"("stream":0,"correlation_id":0,"process_id":0,"thread_id":0,"bytes":0,)"
                      R"("details":{}})"
                      "\n\n" +
                      line_of("b", 2));
  JournalReader reader(dir.path());
  const auto events = reader.read_new();
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[1].name, "b");
  EXPECT_EQ(reader.bad_lines(), 3U);
  const std::string summary = reader.problems_summary();
  EXPECT_NE(summary.find("skipped 3 journal line(s)"), std::string::npos) << summary;
  EXPECT_NE(summary.find(journal + ":2"), std::string::npos) << summary;  // the first bad line
}

TEST(ProfileJournal, TruncatedLastLineIsToleratedAtTheEnd) {
  test::TempDir dir;
  const std::string journal = dir.file("journal-9.jsonl");
  const std::string cut = line_of("c", 3);
  append(journal, line_of("a", 1) + line_of("b", 2) + cut.substr(0, cut.size() / 2));
  JournalReader reader(dir.path());
  EXPECT_EQ(reader.read_new().size(), 2U);
  EXPECT_TRUE(reader.read_new(true).empty());
  EXPECT_EQ(reader.bad_lines(), 0U);
  EXPECT_EQ(reader.truncated_lines(), 1U);
  const std::string summary = reader.problems_summary();
  EXPECT_NE(summary.find("cut-off last line"), std::string::npos) << summary;
  EXPECT_NE(summary.find(journal + ":3"), std::string::npos) << summary;
}

TEST(ProfileJournal, FinalReadTakesACompleteLastLineWithoutNewline) {
  test::TempDir dir;
  const std::string last = line_of("z", 9);
  append(dir.file("journal-3.jsonl"), last.substr(0, last.size() - 1));
  JournalReader reader(dir.path());
  EXPECT_TRUE(reader.read_new().empty());
  const auto events = reader.read_new(true);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].name, "z");
}

// Each process's list of loaded libraries (written at its exit), in file-name
// order; a broken file named and skipped, the others kept; journals not read as lists.
TEST(ProfileJournal, LoadedLibrariesOfEachProcess) {
  test::TempDir dir;
  const LoadedLibrary parent{"cudnn", "/opt/venv/nvidia/cudnn/lib/libcudnn.so.9", "9.10.2", 40};
  const LoadedLibrary child{"cublas", "/usr/local/cuda/lib64/libcublas.so.13", "13.1.0", 41};
  append(dir.file("libraries-40.json"), nlohmann::json(std::vector{parent}).dump() + "\n");
  append(dir.file("libraries-41.json"), nlohmann::json(std::vector{child}).dump());
  append(dir.file("libraries-42.json"), "[{\"name\": \"cudnn\", \"path\": 7}");  // killed mid-write
  append(dir.file("libraries-43.json"), "[{\"name\": \"cudnn\"}]");              // fields missing
  append(dir.file("journal-40.jsonl"), line_of("k", 1));
  const LoadedLibraries loaded = read_loaded_libraries(dir.path());
  EXPECT_EQ(loaded.libraries, (std::vector{parent, child}));
  ASSERT_EQ(loaded.problems.size(), 2U);
  EXPECT_NE(loaded.problems[0].find("libraries-42.json"), std::string::npos) << loaded.problems[0];
  EXPECT_NE(loaded.problems[1].find("libraries-43.json"), std::string::npos) << loaded.problems[1];
  EXPECT_NE(loaded.problems[1].find("path"), std::string::npos) << loaded.problems[1];

  EXPECT_TRUE(read_loaded_libraries(dir.file("none-here")).libraries.empty());
}

bool valid_utf8(const nlohmann::json& j) {
  try {
    (void)j.dump();  // the strict handler throws on invalid UTF-8
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

// The injection library's journal lines (append_journal_line) are the dump of
// to_json's JSON byte for byte, whatever the names and details hold: escapes,
// multi-byte and invalid UTF-8 (replaced, as nlohmann replaces it), numbers at
// their limits, nested and floating-point details. And they read back as the event.
TEST(JournalLine, IsTheDumpOfToJsonByteForByte) {
  const std::vector<std::string> names = {
      "",
      "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(Params)",
      "say \"hi\"",
      "back\\slash",
      "tab\tnew\nline\x01\x1f",
      "del \x7f",
      "layer3.1.conv2 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",  // e-acute, euro, emoji
      "cut \xe2\x82",                                         // a truncated sequence
      "lone \xff byte and \xc0\xaf overlong",
  };
  nlohmann::json counters = {{"chip", "GH100"},
                             {"passes", 3},
                             {"quantities", {{"flops", 1.5e12}, {"dram_bytes", 0.1}}},
                             {"metrics", {{"sm__cycles_elapsed.avg", -2.25}}}};
  const std::vector<nlohmann::json> details = {
      nlohmann::json::object(),
      {{"grid", {128, 1, 1}}, {"block", {256, 1, 1}}, {"registers", 96}},
      {{"domain", "Py\xff"}, {"range_id", 7}, {"color", nullptr}, {"replayed", true}},
      counters,
  };
  constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();
  constexpr std::uint32_t kMax32 = std::numeric_limits<std::uint32_t>::max();
  std::size_t compared = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (std::size_t d = 0; d < details.size(); ++d) {
      TraceEvent e;
      e.kind = static_cast<TraceKind>((i + d) % 9);
      e.name = names[i];
      e.start_ns = i % 2 ? kMax64 - 1 : i;
      e.end_ns = i % 2 ? kMax64 : 10 * i;
      e.device = d % 2 ? kMax32 : 0;
      e.stream = static_cast<std::uint32_t>(i * 13);
      e.correlation_id = d % 2 ? 0 : kMax32;
      e.process_id = 4242;
      e.thread_id = static_cast<std::uint32_t>(d);
      e.bytes = d % 2 ? kMax64 : 0;
      e.details = details[d];
      std::string line = "prefix kept|";
      append_journal_line(line, e);
      const std::string expected =
          "prefix kept|" +
          nlohmann::json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      ASSERT_EQ(line, expected) << "name " << i << ", details " << d;
      if (valid_utf8(nlohmann::json(e))) {  // nothing replaced: reads back unchanged
        const TraceEvent back = nlohmann::json::parse(line.substr(12)).get<TraceEvent>();
        EXPECT_EQ(back, e) << "name " << i << ", details " << d;
      }
      ++compared;
    }
  }
  EXPECT_EQ(compared, names.size() * details.size());
}

}  // namespace
}  // namespace timeroof::cli
