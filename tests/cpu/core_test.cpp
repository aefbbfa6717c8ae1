// The data model, its JSON form and the console formatting helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/json_io.hpp"
#include "core/results.hpp"

namespace timeroof {
namespace {

RunRecord sample_record() {
  RunRecord record;
  record.run = new_run("timeroof run --device 0");
  record.run.machine.gpu.name = "NVIDIA H200";
  record.run.machine.gpu.chip = "GH100";
  record.run.machine.gpu.sm_count = 132;
  record.run.machine.gpu.l2_bytes = 62914560;
  record.run.machine.gpu.sm_clock_max_hz = 1.98e9;
  record.run.machine.gpu.counters = {true, "", "", "probe ok"};
  Ceiling hbm;
  hbm.name = "hbm_copy";
  hbm.kind = CeilingKind::bandwidth;
  hbm.unit = "B/s";
  hbm.measured = 4.4512345678901e12;
  hbm.theoretical = 4.81e12;
  hbm.repeats = 20;
  hbm.spread = 0.0031;
  record.run.machine.ceilings.push_back(hbm);
  Point point;
  point.sweep = "conv2d";
  point.op = "conv2d_fwd";
  point.params = {{"n", 16}, {"c", 64}, {"alpha", 0.1}, {"tiny", 1e-300}};
  point.flops = 2.0 * 16 * 64 * 64 * 9 * 56 * 56;
  point.timing.call = TimeStats{.median_s = 1.234567890123e-5};
  point.timing.launches = 3;
  point.counters["dram__bytes_read.sum"] = 1048576;
  point.kernels.push_back({"void cutlass::Kernel<Params<a, b>>(T&)",
                           {8, 4, 1},
                           {128, 1, 1},
                           4e-6,
                           {{"gpu__time_duration.sum", 4000}}});
  point.status = PointStatus::unsupported;
  point.reason = "CUDNN_STATUS_NOT_SUPPORTED";
  record.points.push_back(point);
  return record;
}

// One params formatter for every printer: batch first, then alphabetical, strings
// unquoted; any family's keys (the chart tooltips once kept only the conv's).
TEST(Format, ParamsTextShowsEveryKeyBatchFirst) {
  const nlohmann::json lstm = {{"seq_length", 16},
                               {"batch", 8},
                               {"hidden_size", 16},
                               {"pass", "inference"},
                               {"input_size", 32}};
  EXPECT_EQ(param_keys(lstm),
            (std::vector<std::string>{"batch", "hidden_size", "input_size", "pass", "seq_length"}));
  EXPECT_EQ(params_text(lstm), "batch=8 hidden_size=16 input_size=32 pass=inference seq_length=16");
  EXPECT_EQ(params_text(lstm, {"pass", "missing", "batch"}), "pass=inference batch=8");
  EXPECT_EQ(params_text(nlohmann::json::array({1, 2})), "");
  EXPECT_EQ(param_value_text(nlohmann::json(0.5)), "0.5");
}

TEST(Results, JsonRoundTripIsExact) {
  const RunRecord original = sample_record();
  const nlohmann::json doc = export_document({original});
  const std::string text = doc.dump();
  const std::vector<RunRecord> parsed =
      parse_export_document(nlohmann::json::parse(text), "memory");
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0], original);
  EXPECT_EQ(export_document(parsed).dump(), text);
}

TEST(Results, BusyCountersRoundTripAndOlderDocumentsReadAsNotBusy) {
  CounterAccess busy;
  busy.reason = "another process is using this GPU's hardware counters";
  busy.fix = "let it finish first, or measure timing only with --no-counters";
  busy.busy = true;
  const nlohmann::json j = busy;
  EXPECT_EQ(j.at("busy"), true);
  EXPECT_EQ(j.get<CounterAccess>(), busy);
  // Written only where it happened: a plain unavailable access has no such key,
  // and documents from before the field read as not busy.
  busy.busy = false;
  const nlohmann::json plain = busy;
  EXPECT_FALSE(plain.contains("busy"));
  EXPECT_FALSE(plain.get<CounterAccess>().busy);
}

TEST(Results, MissingValuesAreNullAndNumbersAreNumbers) {
  const nlohmann::json j = sample_record();
  EXPECT_TRUE(j.at("machine").at("gpu").at("sm_clock_current_hz").is_null());
  EXPECT_TRUE(j.at("machine").at("ceilings").at(0).at("measured").is_number_float());
  EXPECT_TRUE(j.at("points").at(0).at("timing").at("launches").is_number_integer());
  EXPECT_TRUE(j.at("points").at(0).at("timing").at("kernel_time_s").is_null());
  EXPECT_EQ(j.at("points").at(0).at("status"), "unsupported");
}

// Schema 1 stored one wall time per point (events around each synchronized
// call): it reads as T_call, without an interval; the other times stay empty.
TEST(Results, SchemaOneTimingReadsAsTCall) {
  const nlohmann::json v1 = {
      {"wall_median_s", 4.5e-5}, {"wall_spread", 0.12},  {"repeats", 100},
      {"kernel_time_s", 1.5e-5}, {"launches", 2},        {"api_time_s", 8e-6},
      {"launch_gap_s", nullptr}, {"h2d_bytes", nullptr}, {"h2d_time_s", nullptr},
      {"d2h_bytes", nullptr},    {"d2h_time_s", nullptr}};
  const Timing t = v1.get<Timing>();
  ASSERT_TRUE(t.call);
  EXPECT_DOUBLE_EQ(t.call->median_s, 4.5e-5);
  EXPECT_DOUBLE_EQ(t.call->spread, 0.12);
  EXPECT_EQ(t.call->samples, 100);
  EXPECT_FALSE(t.call->ci_low_s);
  EXPECT_FALSE(t.call->relative_ci());
  EXPECT_FALSE(t.stream || t.graph || t.issue);
  EXPECT_DOUBLE_EQ(*t.kernel_time_s, 1.5e-5);
  // Without a wall time nothing is invented.
  nlohmann::json unmeasured = v1;
  unmeasured["wall_median_s"] = nullptr;
  EXPECT_FALSE(unmeasured.get<Timing>().call);
}

TEST(Results, ThreeTimesRoundTripWithTheirStatistics) {
  Timing t;
  t.call = TimeStats{.median_s = 5e-5,
                     .ci_low_s = 4.9e-5,
                     .ci_high_s = 5.2e-5,
                     .spread = 0.1,
                     .min_s = 4e-5,
                     .max_s = 9e-5,
                     .samples = 300,
                     .calls_per_sample = 1,
                     .converged = false};
  t.stream = TimeStats{.median_s = 2e-5, .samples = 40, .calls_per_sample = 10, .converged = true};
  t.issue = TimeStats{.median_s = 1.8e-5, .samples = 300};
  t.graph_unavailable =
      "the call cannot be captured into a CUDA graph: cudaErrorStreamCaptureUnsupported";
  const nlohmann::json j = t;
  EXPECT_TRUE(j.at("graph").is_null());
  EXPECT_EQ(j.at("stream").at("calls_per_sample"), 10);
  EXPECT_FALSE(j.contains("wall_median_s"));
  EXPECT_EQ(j.get<Timing>(), t);
}

// Numbers are imported exactly or refused with the key (issue 16: repeats
// 4294967303 became 7, launches 1e20 INT64_MIN, seq 2^40+1 1, a 4-element grid
// lost its 4th value, schema_version 2^32+1 read as 1, "format": 5 was an
// internal error).
TEST(Results, ImportedNumbersAreExactOrRefusedWithTheirKey) {
  const nlohmann::json good = export_document({sample_record()});
  auto refused = [&](const std::function<void(nlohmann::json&)>& mutate, const std::string& key) {
    nlohmann::json doc = good;
    mutate(doc);
    try {
      parse_export_document(doc, "m.json");
      ADD_FAILURE() << "accepted: " << key;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::usage) << e.what();
      EXPECT_NE(std::string(e.what()).find("m.json: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  refused([](auto& d) { d["runs"][0]["machine"]["ceilings"][0]["repeats"] = 4294967303ULL; },
          "repeats = 4294967303");
  refused([](auto& d) { d["runs"][0]["points"][0]["timing"]["launches"] = 1e20; }, "launches");
  refused([](auto& d) { d["runs"][0]["points"][0]["seq"] = (1LL << 40) + 1; }, "seq");
  refused([](auto& d) { d["runs"][0]["points"][0]["kernels"][0]["grid"] = {1, 2, 3, 4}; }, "grid");
  refused([](auto& d) { d["runs"][0]["points"][0]["seq"] = 2.5; }, "seq = 2.5");
  refused([](auto& d) { d["schema_version"] = (1ULL << 32) + 1; }, "newer timeroof");
  refused([](auto& d) { d["schema_version"] = "1"; }, "invalid schema_version \"1\"");
  refused([](auto& d) { d["format"] = 5; }, "not a timeroof export");
  // In range: exact.
  nlohmann::json doc = good;
  doc["runs"][0]["points"][0]["timing"]["launches"] = 9007199254740993LL;  // 2^53 + 1
  EXPECT_EQ(*parse_export_document(doc, "m.json")[0].points[0].timing.launches, 9007199254740993LL);
}

// A field of the wrong type is named by its key path from the document's top, in
// the tool's words (issue 16: 610 of 1,000 fuzzed files got the JSON library's
// "[json.exception.type_error.302] type must be number, but is string").
TEST(Results, MalformedExportsNameTheKeyPathNotTheLibrary) {
  const nlohmann::json good = export_document({sample_record()});
  auto message = [&](const std::function<void(nlohmann::json&)>& mutate) {
    nlohmann::json doc = good;
    mutate(doc);
    try {
      parse_export_document(doc, "m.json");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::usage) << e.what();
      EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("type must be"), std::string::npos) << e.what();
      return std::string(e.what());
    }
    ADD_FAILURE() << "accepted";
    return std::string();
  };
  const auto point = [](nlohmann::json& d) -> nlohmann::json& { return d["runs"][0]["points"][0]; };
  EXPECT_NE(message([&](auto& d) {
              point(d)["timing"]["call"]["median_s"] = "fast";
            }).find("runs[0].points[0].timing.call.median_s is a string, not a number"),
            std::string::npos);
  EXPECT_NE(message([&](auto& d) {
              point(d)["counters"]["l2_bytes"] = true;
            }).find("runs[0].points[0].counters.l2_bytes is a boolean, not a number"),
            std::string::npos);
  EXPECT_NE(message([&](auto& d) { point(d).erase("op"); }).find("runs[0].points[0].op is missing"),
            std::string::npos);
  EXPECT_NE(message([&](auto& d) {
              d["runs"][0]["machine"]["gpu"] = "H100";
            }).find("runs[0].machine.gpu is a string, not an object"),
            std::string::npos);
  EXPECT_NE(message([&](auto& d) {
              point(d)["kernels"][0]["grid"] = {1, "2", 3};
            }).find("runs[0].points[0].kernels[0].grid[1] is a string, not an integer"),
            std::string::npos);
  EXPECT_NE(message([&](auto& d) {
              point(d)["status"] = "meh";
            }).find("runs[0].points[0].status = \"meh\""),
            std::string::npos);
  EXPECT_NE(message([&](auto& d) { d["runs"] = {5}; }).find("runs[0] is an integer, not an object"),
            std::string::npos);
}

TEST(Results, UntrustedJsonHasANestingLimit) {
  const std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_NO_THROW(parse_untrusted_json(at_limit, "ok.json", "fix"));
  const std::string over = "[" + at_limit + "]";
  try {
    parse_untrusted_json(over, "deep.json", "pass another file");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("deep.json: JSON nested deeper than 256 levels"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("pass another file"), std::string::npos);
  }
  try {
    parse_untrusted_json("{\"a\": ", "cut.json", "pass another file");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut.json is not valid JSON"), std::string::npos);
  }
}

TEST(Results, ExportDocumentIsVersioned) {
  const nlohmann::json doc = export_document({});
  EXPECT_EQ(doc.at("format"), kExportFormat);
  EXPECT_EQ(doc.at("schema_version"), kExportSchemaVersion);
  EXPECT_TRUE(doc.at("exported_by").at("git_sha").is_string());
}

TEST(Results, RejectsForeignAndNewerDocuments) {
  try {
    parse_export_document(nlohmann::json{{"hello", 1}}, "x.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("x.json: not a timeroof export"), std::string::npos);
  }
  nlohmann::json newer = export_document({});
  newer["schema_version"] = kExportSchemaVersion + 1;
  try {
    parse_export_document(newer, "y.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer timeroof"), std::string::npos) << e.what();
  }
  nlohmann::json broken = export_document({sample_record()});
  broken["runs"][0]["machine"].erase("gpu");
  try {
    parse_export_document(broken, "z.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpu"), std::string::npos) << e.what();
  }
}

TEST(Results, EnumNamesRoundTripAndUnknownNamesAreUsageErrors) {
  for (auto s : {PointStatus::ok, PointStatus::unsupported, PointStatus::out_of_memory,
                 PointStatus::counters_unavailable, PointStatus::failed})
    EXPECT_EQ(point_status_from_string(to_string(s)), s);
  try {
    ceiling_kind_from_string("speed");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("compute, bandwidth, latency"), std::string::npos);
  }
}

TEST(Results, NewRunHasProvenance) {
  const timeroof::Run a = new_run("timeroof run");
  const timeroof::Run b = new_run("timeroof run");
  EXPECT_NE(a.uuid, b.uuid);
  EXPECT_EQ(a.uuid.size(), 36u);
  EXPECT_EQ(a.uuid[14], '4');
  EXPECT_FALSE(a.tool_version.empty());
  EXPECT_FALSE(a.git_sha.empty());
  EXPECT_FALSE(a.host.empty());
  EXPECT_EQ(a.started_at.size(), 24u);  // 2026-11-21T10:44:00.123Z
  EXPECT_EQ(a.started_at.back(), 'Z');
}

TEST(Format, WrapWordsBreaksAtSpacesWithinTheWidth) {
  using Lines = std::vector<std::string>;
  EXPECT_EQ(wrap_words("measure the roofs of the GPU", 12),
            (Lines{"measure the", "roofs of the", "GPU"}));
  EXPECT_EQ(wrap_words("short", 12), Lines{"short"});
  EXPECT_EQ(wrap_words("", 12), Lines{""});
  EXPECT_EQ(wrap_words("no limit at all", 0), Lines{"no limit at all"});
  // Aligned runs of spaces stay inside a line, vanish at a break.
  EXPECT_EQ(wrap_words("a    b    c", 6), (Lines{"a    b", "c"}));
  EXPECT_EQ(wrap_words("  indented text", 10), (Lines{"  indented", "text"}));
  // A word wider than a line starts its own and is cut, by code points.
  EXPECT_EQ(wrap_words("abcdefghij", 4), (Lines{"abcd", "efgh", "ij"}));
  EXPECT_EQ(wrap_words("x µµµµµµ", 4), (Lines{"x", "µµµµ", "µµ"}));
  EXPECT_EQ(wrap_words("ends with spaces   ", 40), Lines{"ends with spaces"});
  for (const std::string& line : wrap_words("T_stream 3.2 µs back to back, 1.2 ms synchronized", 9))
    EXPECT_LE(display_width(line), 9u) << line;
  EXPECT_EQ(display_width("3.2 µs"), 6u);
}

TEST(Format, ShortenedMethodKeepsWholeClausesThenWholeItems) {
  const std::string method =
      "k ld.cg 256x8 (16-byte loads; warm L2); median of 20 launches; best of 4 variants: "
      "a 9.1 TB/s, b 9.2 TB/s, c 9.3 TB/s, d 9.4 TB/s; bytes = served";
  EXPECT_EQ(shortened_method(method, method.size()), method);
  // The clause in parentheses is not cut at its own "; ".
  const std::string two_clauses = "k ld.cg 256x8 (16-byte loads; warm L2); median of 20 launches";
  EXPECT_EQ(shortened_method(method, two_clauses.size() + 2),
            two_clauses + "; ... [+" + std::to_string(method.size() - two_clauses.size()) +
                " characters: the whole method is in the export]");
  // Then the next clause's whole items that fit.
  const std::string with_items = two_clauses + "; best of 4 variants: a 9.1 TB/s, b 9.2 TB/s";
  EXPECT_EQ(shortened_method(method, with_items.size() + 3),
            with_items + ", ... [+" + std::to_string(method.size() - with_items.size()) +
                " characters: the whole method is in the export]");
  // A first clause longer than the limit, with no item that fits: cut at a space.
  EXPECT_EQ(shortened_method("one two three four", 10),
            "one two ... [+11 characters: the whole method is in the export]");
  for (std::size_t limit : {5u, 20u, 60u, 100u, 140u}) {
    const std::string shown = shortened_method(method, limit);
    const std::size_t note = shown.find(" [+");
    ASSERT_NE(note, std::string::npos) << limit;
    EXPECT_LE(note, limit + 5) << shown;  // the text kept, then " ..." at most
    EXPECT_EQ(method.compare(0, note - 5, shown, 0, note - 5), 0) << shown;  // a prefix
  }
}

TEST(Format, EngineeringPrefixes) {
  EXPECT_EQ(format_si(1.98e9, "Hz"), "1.98 GHz");
  EXPECT_EQ(format_si(4.452e12, "B/s"), "4.45 TB/s");
  EXPECT_EQ(format_si(66.9e12, "FLOP/s"), "66.9 TFLOP/s");
  // Seconds read as every time does.
  EXPECT_EQ(format_si(2.6e-6, "s"), "2.6 us");
  EXPECT_EQ(format_si(785e-9, "s"), "785 ns");
  EXPECT_EQ(format_si(0.0, "s"), "0");
  EXPECT_EQ(format_time(15e-9), "15 ns");
  EXPECT_EQ(format_time(0.05e-9), "0.05 ns");
  EXPECT_EQ(format_time(3.04e-6), "3.0 us");
  EXPECT_EQ(format_time(1.2e-3), "1.2 ms");
  EXPECT_EQ(format_si(std::optional<double>{}, "s"), "-");
  EXPECT_EQ(format_si(std::numeric_limits<double>::quiet_NaN(), "s"), "-");
  EXPECT_EQ(format_binary_bytes(50.0 * 1024 * 1024), "50.0 MiB");
  EXPECT_EQ(format_binary_bytes(512), "512 B");
}

TEST(Format, ShellJoinQuotesWhatTheShellWouldSplit) {
  EXPECT_EQ(shell_join({"timeroof", "run", "--db", "a b.db"}), "timeroof run --db 'a b.db'");
  EXPECT_EQ(shell_join({"x", "it's"}), "x 'it'\\''s'");
  EXPECT_EQ(shell_join({"sweep", "--batch", "1..1024:x2"}), "sweep --batch 1..1024:x2");
  EXPECT_EQ(shell_join({""}), "''");
  // Bytes that are not UTF-8 and control characters as $'\xHH' (issue 16: argv was
  // stored raw, and a run's JSON cannot hold what is not UTF-8): the line is UTF-8
  // text without controls and still pastes back into bash.
  EXPECT_EQ(shell_join({"sweep", "caf\xe9.toml", "--name", "a\x1b[31mb"}),
            "sweep $'caf\\xe9.toml' --name $'a\\x1b[31mb'");
  EXPECT_EQ(shell_join({"it's \\ \xff"}), "$'it\\'s \\\\ \\xff'");
  EXPECT_EQ(shell_join({"\xff"
                        "ab"}),
            "$'\\xffab'")
      << "two hex digits: 'a' stays a letter";
  EXPECT_EQ(shell_join({"caf\xc3\xa9 ok"}), "'caf\xc3\xa9 ok'") << "UTF-8 stays as it is";
  EXPECT_TRUE(valid_utf8(shell_join({"\xc3", "\xed\xa0\x80", "\x80\x80"})));
}

// Names from imported files end up in file names (issue 16: a 218-byte sweep
// name failed the report with "File name too long").
TEST(Format, FileNamePartIsSafeBoundedAndDistinct) {
  EXPECT_EQ(file_name_part("conv2d-default"), "conv2d-default") << "safe names unchanged";
  EXPECT_EQ(file_name_part("v1.2_x"), "v1.2_x");
  for (const std::string name :
       {std::string("a/b"), std::string(".."), std::string("-rf"), std::string(),
        std::string("a\x1b[31mb"), std::string("caf\xc3\xa9"), std::string(300, 'x'),
        std::string(5000, 'y')}) {
    const std::string part = file_name_part(name);
    EXPECT_LE(part.size(), kMaxFileNamePart) << name.size();
    EXPECT_FALSE(part.empty());
    EXPECT_EQ(part.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789._-"),
              std::string::npos)
        << part;
    EXPECT_NE(part.front(), '.') << part;
    EXPECT_NE(part.front(), '-') << part;
    EXPECT_EQ(part, file_name_part(name)) << "stable";
  }
  // Names that differ only past the cut, or only in a replaced character.
  const std::string prefix(250, 'p');
  EXPECT_NE(file_name_part(prefix + "-one"), file_name_part(prefix + "-two"));
  EXPECT_NE(file_name_part("a/b"), file_name_part("a:b"));
  EXPECT_NE(file_name_part("a/b"), "a_b");
  EXPECT_EQ(file_name_part(std::string(300, 'x'), 20).size(), 20u);
}

TEST(Format, DecodeUtf8RefusesWhatIsNotWellFormed) {
  const Utf8Char e_acute = decode_utf8("\xc3\xa9!");
  EXPECT_TRUE(e_acute.valid);
  EXPECT_EQ(e_acute.code_point, U'\u00e9');
  EXPECT_EQ(e_acute.length, 2u);
  const Utf8Char nonchar = decode_utf8("\xef\xbf\xbe");  // U+FFFE: well-formed UTF-8
  EXPECT_TRUE(nonchar.valid);
  EXPECT_EQ(nonchar.code_point, 0xFFFEu);
  EXPECT_EQ(decode_utf8("\xf0\x9f\x98\x80").code_point, 0x1F600u);
  for (const char* bad :
       {"\xff", "\x80", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {
    const Utf8Char c = decode_utf8(bad);
    EXPECT_FALSE(c.valid) << bad;
    EXPECT_EQ(c.length, 1u) << bad;
  }
}

// Text from the system (a host name, a file name) is stored as UTF-8, each byte
// that is not replaced by U+FFFD.
TEST(Format, Utf8IsCheckedAndInvalidBytesReplaced) {
  EXPECT_TRUE(valid_utf8(""));
  EXPECT_TRUE(valid_utf8("caf\xc3\xa9 \xf0\x9f\x98\x80"));
  for (const char* bad : {"\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"})
    EXPECT_FALSE(valid_utf8(bad)) << bad;
  EXPECT_EQ(replace_invalid_utf8("host\xff-\xc3\xa9"), "host\xef\xbf\xbd-\xc3\xa9");
  EXPECT_EQ(replace_invalid_utf8("\xc3"), "\xef\xbf\xbd");
  EXPECT_EQ(replace_invalid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_TRUE(valid_utf8(replace_invalid_utf8("\x80\xbf\xfe\xff\xf8\x88\x80\x80\x80")));
  EXPECT_EQ(replace_invalid_utf8("plain"), "plain");
}

// Imported names, hosts and command lines printed by `runs` and `analyze` (issue
// 16: escape sequences reached the terminal raw).
TEST(Format, TerminalSafeShowsControlsAsEscapesAndKeepsUtf8) {
  EXPECT_EQ(terminal_safe("plain caf\xc3\xa9 \xe2\x86\x92 ok"),
            "plain caf\xc3\xa9 \xe2\x86\x92 ok");
  EXPECT_EQ(terminal_safe("\x1b[31mred\x07"), "\\x1b[31mred\\x07");
  EXPECT_EQ(terminal_safe("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f");
  EXPECT_EQ(terminal_safe("a\nb", LineBreaks::keep), "a\nb");
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "2J"),
            "\\u009b2J")
      << "C1 CSI";
  EXPECT_EQ(terminal_safe("\xe2\x80\xae"
                          "txt"),
            "\\u202etxt")
      << "right-to-left override";
  EXPECT_EQ(terminal_safe("bad \xff\x9b end"), "bad \\xff\\x9b end");
  const std::string once = terminal_safe("\x1b]0;title\x07");
  EXPECT_EQ(terminal_safe(once), once) << "escaping twice changes nothing";
}

}  // namespace
}  // namespace timeroof
