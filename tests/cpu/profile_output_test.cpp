// The outputs of a profile (#17) from tests/fixtures/profile-synthetic.jsonl:
// the Perfetto / Chrome trace JSON (plots/perfetto_trace) checked for what
// ui.perfetto.dev needs (every complete event has name/ph/ts/dur/pid/tid, flows
// pair up and bind, processes and threads are named, microsecond timestamps keep
// nanoseconds, counter tracks only with per-kernel metrics), and the console
// text and report of plots/profile_report through their exact lines.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plots/perfetto_trace.hpp"
#include "plots/profile_report.hpp"
#include "src/cli/profile_console.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/xml_check.hpp"

namespace timeroof::plots {
namespace {

using nlohmann::json;

const std::vector<TraceEvent>& fixture() {
  static const std::vector<TraceEvent> events =
      test::load_trace("tests/fixtures/profile-synthetic.jsonl");
  return events;
}

// The same trace with kernel counters, judged on round roofs (the truth of
// tests/cpu/profile_model_test.cpp).
const std::vector<TraceEvent>& counters_fixture() {
  static const std::vector<TraceEvent> events =
      test::load_trace("tests/fixtures/profile-counters.jsonl");
  return events;
}

roofline::ProfileOptions test_roofs() {
  roofline::ProfileOptions options;
  options.roofs = roofline::machine_roofs(test::profile_test_machine());
  options.roofs_from = "run 1";
  return options;
}

const roofline::ProfileAnalysis& counters_analysis() {
  static const roofline::ProfileAnalysis a =
      roofline::analyze_profile(counters_fixture(), test_roofs());
  return a;
}

// The index of the record of `kind` with this correlation id: what KernelRateMap is keyed by.
std::size_t record_of(const std::vector<TraceEvent>& events, TraceKind kind,
                      std::uint32_t correlation) {
  for (std::size_t i = 0; i < events.size(); ++i)
    if (events[i].kind == kind && events[i].correlation_id == correlation) return i;
  ADD_FAILURE() << "no " << to_string(kind) << " record with correlation id " << correlation;
  return events.size();
}

// The last n cells of a row: the model's columns.
std::vector<std::string> tail(const std::vector<std::string>& row, std::size_t n) {
  return {row.end() - static_cast<std::ptrdiff_t>(n), row.end()};
}

const json kProvenance = {{"command_line", "python3 train.py"}, {"gpu", "NVIDIA H100"}};

std::vector<json> with_ph(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == ph) out.push_back(e);
  return out;
}

const json* find_named(const std::vector<json>& events, const std::string& name) {
  for (const json& e : events)
    if (e["name"] == name) return &e;
  return nullptr;
}

TEST(PerfettoTrace, CompleteEventsCarryTheirFields) {
  // Through text and back: what a file holds is valid JSON.
  const json trace = json::parse(perfetto_trace(fixture(), kProvenance).dump());
  EXPECT_EQ(trace["displayTimeUnit"], "ns");
  EXPECT_EQ(trace["metadata"]["provenance"], kProvenance);
  EXPECT_EQ(trace["metadata"]["origin_ns"], 1'000'000'000u);
  const std::vector<json> slices = with_ph(trace, "X");
  EXPECT_EQ(slices.size(), 45u);  // every record but the mark
  for (const json& e : slices)
    for (const char* key : {"name", "ph", "ts", "dur", "pid", "tid"})
      EXPECT_TRUE(e.contains(key)) << key << " missing in " << e.dump();

  const json* memcpy_call = find_named(slices, "cudaMemcpy");
  ASSERT_TRUE(memcpy_call);
  EXPECT_EQ((*memcpy_call)["ts"], 0.0);  // the first record
  EXPECT_EQ((*memcpy_call)["dur"], 25.0);
  EXPECT_EQ((*memcpy_call)["pid"], 100);
  EXPECT_EQ((*memcpy_call)["tid"], 1);

  const json* gemm = find_named(slices, "gemm_kernel");  // iteration 0's, on stream 7
  ASSERT_TRUE(gemm);
  EXPECT_EQ((*gemm)["ts"], 120.0);
  EXPECT_EQ((*gemm)["dur"], 40.0);
  EXPECT_EQ((*gemm)["pid"], 101);  // the GPU's pid follows the host's
  EXPECT_EQ((*gemm)["tid"], 7);
  EXPECT_EQ((*gemm)["cat"], "kernel");
  EXPECT_EQ((*gemm)["args"]["grid"], json::array({128, 1, 1}));
  EXPECT_EQ((*gemm)["args"]["correlation_id"], 11);

  const json* h2d = find_named(slices, "HtoD");
  ASSERT_TRUE(h2d);
  EXPECT_EQ((*h2d)["args"]["bytes"], 1'000'000);
  const json* step = find_named(slices, "step");
  ASSERT_TRUE(step);
  EXPECT_EQ((*step)["ts"], 100.0);
  EXPECT_EQ((*step)["dur"], 150.0);
  EXPECT_EQ((*step)["tid"], 1);
  EXPECT_EQ((*step)["args"]["range_id"], 1);

  const std::vector<json> marks = with_ph(trace, "i");
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0]["name"], "checkpoint");
  EXPECT_EQ(marks[0]["ts"], 240.0);
  EXPECT_EQ(marks[0]["s"], "t");
}

TEST(PerfettoTrace, FlowsPairLaunchesWithTheirWork) {
  const json trace = perfetto_trace(fixture(), kProvenance);
  const std::vector<json> starts = with_ph(trace, "s"), finishes = with_ph(trace, "f");
  EXPECT_EQ(starts.size(), 13u);  // every GPU record but the unattributed kernel
  ASSERT_EQ(finishes.size(), starts.size());
  std::map<std::uint64_t, json> start_by_id;
  for (const json& s : starts) {
    EXPECT_EQ(s["pid"], 100);
    EXPECT_EQ(s["tid"], 1);
    EXPECT_TRUE(start_by_id.emplace(s["id"].get<std::uint64_t>(), s).second) << "repeated id";
  }
  for (const json& f : finishes) {
    EXPECT_EQ(f["bp"], "e");
    EXPECT_EQ(f["pid"], 101);
    const auto it = start_by_id.find(f["id"].get<std::uint64_t>());
    ASSERT_NE(it, start_by_id.end()) << f.dump();
    EXPECT_LE(it->second["ts"].get<double>(), f["ts"].get<double>());
    start_by_id.erase(it);
  }
  EXPECT_TRUE(start_by_id.empty());
  // The first flow: cudaMemcpy at 0 -> the HtoD copy at 2 us on stream 7.
  EXPECT_EQ(starts[0]["ts"], 0.0);
  EXPECT_EQ(finishes[0]["ts"], 2.0);
  EXPECT_EQ(finishes[0]["tid"], 7);
}

TEST(PerfettoTrace, MetadataNamesProcessesAndThreads) {
  const json trace = perfetto_trace(fixture(), kProvenance);
  std::set<std::string> processes, threads;
  std::map<std::uint64_t, std::uint64_t> sort_index;
  for (const json& m : with_ph(trace, "M")) {
    if (m["name"] == "process_name") processes.insert(m["args"]["name"].get<std::string>());
    if (m["name"] == "thread_name") threads.insert(m["args"]["name"].get<std::string>());
    if (m["name"] == "process_sort_index")
      sort_index[m["pid"].get<std::uint64_t>()] = m["args"]["sort_index"].get<std::uint64_t>();
  }
  EXPECT_EQ(processes, (std::set<std::string>{"Process 100", "GPU 0"}));
  EXPECT_EQ(threads, (std::set<std::string>{"Thread 1", "Stream 7", "Stream 8", "Stream 9"}));
  EXPECT_LT(sort_index.at(100), sort_index.at(101));  // the host above its GPU
}

TEST(PerfettoTrace, CounterTracksOnlyWithMetrics) {
  EXPECT_TRUE(with_ph(perfetto_trace(fixture(), kProvenance), "C").empty());
  KernelRateMap rates;
  // Iteration 0's gemm_kernel, stream 7; and a record that is no kernel (its cuLaunchKernel).
  rates[record_of(fixture(), TraceKind::kernel, 11)] = {2.0e12, 1.5e12, 0.5};
  rates[record_of(fixture(), TraceKind::driver_api, 12)] = {std::nullopt, 3.0e12, std::nullopt};
  const std::vector<json> counters = with_ph(perfetto_trace(fixture(), kProvenance, rates), "C");
  ASSERT_EQ(counters.size(), 6u);  // three rates, each raised at the start and dropped at the end
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  for (const json& c : counters) {
    EXPECT_EQ(c["pid"], 101);
    series[c["name"].get<std::string>()].emplace_back(c["ts"].get<double>(),
                                                      c["args"]["value"].get<double>());
  }
  using Samples = std::vector<std::pair<double, double>>;
  EXPECT_EQ(series["FLOP/s (stream 7)"], (Samples{{120.0, 2.0e12}, {160.0, 0.0}}));
  EXPECT_EQ(series["bytes/s (stream 7)"], (Samples{{120.0, 1.5e12}, {160.0, 0.0}}));
  EXPECT_EQ(series["fraction of roof (stream 7)"], (Samples{{120.0, 0.5}, {160.0, 0.0}}));
}

TEST(PerfettoTrace, NanosecondsUnclosedAndOverlappingRanges) {
  const std::uint64_t t0 = 5'000'000'000'000;
  const std::vector<TraceEvent> events = {
      test::trace_event(TraceKind::nvtx_range, "a", t0, t0 + 5000),
      test::trace_event(TraceKind::nvtx_range, "b", t0 + 1234,
                        t0 + 9000),  // overlaps a: cannot nest
      test::trace_event(TraceKind::nvtx_range, "open", t0 + 2000, 0),
      test::trace_event(TraceKind::runtime_api, "cudaFree", t0 + 3000, t0 + 8501)};
  const json trace = perfetto_trace(events, json::object());
  EXPECT_EQ(trace["metadata"]["origin_ns"], t0);
  const std::vector<json> slices = with_ph(trace, "X");
  ASSERT_TRUE(find_named(slices, "cudaFree"));
  EXPECT_DOUBLE_EQ((*find_named(slices, "cudaFree"))["dur"].get<double>(), 5.501);
  const json* open = find_named(slices, "open");
  ASSERT_TRUE(open);
  EXPECT_EQ((*open)["args"]["unclosed"], true);
  EXPECT_DOUBLE_EQ((*open)["dur"].get<double>(), 7.0);  // to the trace's end, b's
  EXPECT_FALSE(find_named(slices, "b"));
  const std::vector<json> begins = with_ph(trace, "b"), ends = with_ph(trace, "e");
  ASSERT_EQ(begins.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(begins[0]["name"], "b");
  EXPECT_DOUBLE_EQ(begins[0]["ts"].get<double>(), 1.234);
  EXPECT_DOUBLE_EQ(ends[0]["ts"].get<double>(), 9.0);
  EXPECT_EQ(begins[0]["id"], ends[0]["id"]);
  EXPECT_EQ(begins[0]["args"]["nested"], false);
}

TEST(PerfettoTrace, EmptyTrace) {
  const json trace = perfetto_trace({}, json::object());
  EXPECT_TRUE(trace["traceEvents"].is_array());
  EXPECT_TRUE(trace["traceEvents"].empty());
  EXPECT_EQ(trace["metadata"]["origin_ns"], 0u);
}

TEST(ProfileConsole, TablesOfTheFixture) {
  const std::string text = cli::profile_text(fixture(), kProvenance, 0);
  const std::vector<std::string> lines = {
      "Profile of python3 train.py",
      "46 records over 670 us; GPU busy 283 us (42% of the span): kernels 248 us, copies 50 us. "
      "Unattributed (no launching call in the trace): kernels 1, copies 0, 8.0 us of GPU time.",
      "Top kernels by total time",
      "  gemm_kernel          6  210 us                74%   30 us   30 us   40 us",
      "  external_kernel      1  8.0 us                 3%  8.0 us  8.0 us  8.0 us",
      "Copies",
      "  DtoH           3  1.50 MB  30 us  50.0 GB/s",
      "  cuLaunchKernel         driver_api       3     9.0 us",
      "NVTX ranges of process 100, thread 1",
      "  step            3  480 us   100%        9       240 us       3      30 us     78 us    "
      "225 us",
      "    forward       3  300 us    62%        9       240 us       0          0     36 us     "
      "75 us",
      "      layer0      3  114 us    24%        3       120 us       0          0     15 us     "
      "24 us",
      "      layer1      3  150 us    31%        6       120 us       0          0     21 us     "
      "30 us",
      "Where each iteration of step goes",
      "  3          170 us    75 us        10 us                 85 us         3",
      "  median     160 us    75 us        10 us                 75 us         -"};
  for (const std::string& line : lines)
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << "missing line:\n"
                                                         << line << "\nin:\n"
                                                         << text;
  EXPECT_NE(
      cli::profile_text(std::vector<TraceEvent>{}, json::object(), 0).find("None in the trace."),
      std::string::npos);
}

// A trace made with `profile --api none`: the printers say the API calls and the
// ranges' GPU work were not traced, never that they were zero.
TEST(ProfileConsole, WithoutApiCallsSaysNotTraced) {
  const std::vector<TraceEvent> events = test::without_api_records(fixture());
  roofline::ProfileOptions options;
  options.api = ApiTracing::none;
  const roofline::ProfileAnalysis a = roofline::analyze_profile(events, options);
  const std::string text = cli::profile_text(a, kProvenance, 0);
  EXPECT_NE(text.find("Host API calls were not traced (profile --api none)"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("Unattributed (no launching call"), std::string::npos) << text;
  EXPECT_EQ(text.find("None in the trace."), std::string::npos) << text;  // the API table
  // step: 3 calls, 480 us, 100%, then kernels, kernel time, copies, copy time and
  // API time not traced; GPU idle 225 us as with every call traced.
  EXPECT_NE(text.find("  step            3  480 us   100%  not traced   not traced  not traced  "
                      "not traced  not traced    225 us"),
            std::string::npos)
      << text;
  const ProfileReport report = render_profile_report(events, kProvenance, options);
  EXPECT_NE(report.markdown.find("Host API calls were not traced"), std::string::npos);
  EXPECT_NE(report.markdown.find("| step | 3 | 480 us | 100% | not traced |"), std::string::npos)
      << report.markdown;

  // --api launches: the numbers as they are, with what they cover said.
  options.api = ApiTracing::launches;
  const std::string launches =
      cli::profile_text(roofline::analyze_profile(fixture(), options), kProvenance, 0);
  EXPECT_NE(launches.find("API time counts those calls alone"), std::string::npos) << launches;
  EXPECT_EQ(launches.find("not traced"), std::string::npos) << launches;
}

TEST(ProfileReport, HtmlAndMarkdown) {
  const ProfileReport report = render_profile_report(fixture(), kProvenance);
  const test::XmlCheck xml = test::check_xml(report.html);
  EXPECT_TRUE(xml.ok) << xml.error;
  for (const std::string& text :
       {std::string("Top kernels by total time"), std::string("Where each iteration of step goes"),
        std::string("NVTX ranges of process 100, thread 1"), std::string("· · layer0"),
        std::string("python3 train.py")}) {
    EXPECT_NE(report.html.find(text), std::string::npos) << text;
    EXPECT_NE(report.markdown.find(text), std::string::npos) << text;
  }
  EXPECT_NE(report.markdown.find("| gemm_kernel | 6 | 210 us | 74% | 30 us | 30 us | 40 us |"),
            std::string::npos)
      << report.markdown;
  const ProfileReport empty = render_profile_report({}, json::object());
  EXPECT_NE(empty.markdown.find("None in the trace."), std::string::npos);
  EXPECT_NE(empty.markdown.find("No provenance was recorded."), std::string::npos);
}

// A profile's provenance: its own items one a row (the command as a command line,
// the environment as assignments), and the CUDA libraries the program loaded as a
// table in the report and on the console; none where none were recorded.
TEST(ProfileReport, ProvenanceWithTheProgramsLibraries) {
  const json provenance = {
      {"command_line", "timeroof profile -- python3 train.py"},
      {"profile",
       {{"command", {"python3", "train.py", "--steps", "3"}},
        {"environment", {{"CUDA_VISIBLE_DEVICES", "1"}, {"TIMEROOF_PROFILE_API", "launches"}}},
        {"exit", {{"code", 0}}},
        {"libraries",
         {LoadedLibrary{"cudnn", "/venv/nvidia/cudnn/lib/libcudnn.so.9", "9.10.2", 40},
          LoadedLibrary{"nccl", "/usr/lib/libnccl.so.2", "", 40}}}}}};
  const std::vector<std::pair<std::string, std::string>> rows = provenance_rows(provenance);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"command_line", "timeroof profile -- python3 train.py"},
      {"profile.command", "python3 train.py --steps 3"},
      {"profile.environment", "CUDA_VISIBLE_DEVICES=1; TIMEROOF_PROFILE_API=launches"},
      {"profile.exit", "{\"code\":0}"}};
  EXPECT_EQ(rows, expected);

  const ProfileReport report = render_profile_report(fixture(), provenance);
  EXPECT_NE(report.markdown.find("### Profile provenance"), std::string::npos);
  EXPECT_NE(report.markdown.find("| 40 | cudnn | 9.10.2 | /venv/nvidia/cudnn/lib/libcudnn.so.9 |"),
            std::string::npos)
      << report.markdown;
  EXPECT_NE(report.markdown.find("| 40 | nccl | \\- | /usr/lib/libnccl.so.2 |"), std::string::npos)
      << report.markdown;
  EXPECT_NE(report.html.find("CUDA libraries the program loaded"), std::string::npos);
  const std::string text = cli::profile_text(fixture(), provenance, 0);
  EXPECT_NE(text.find("CUDA libraries the program loaded\n"), std::string::npos) << text;
  EXPECT_NE(text.find("40  cudnn    9.10.2   /venv/nvidia/cudnn/lib/libcudnn.so.9\n"),
            std::string::npos)
      << text;
  // An older run, or a program killed before its exit: no table, no empty one.
  EXPECT_EQ(cli::profile_text(fixture(), kProvenance, 0).find("CUDA libraries"), std::string::npos);
  EXPECT_TRUE(libraries_table(kProvenance).rows.empty());
}

TEST(PerfettoTrace, CounterTracksFromTheModel) {
  const KernelRateMap rates = kernel_rates(counters_analysis());
  ASSERT_EQ(rates.size(), 6u);  // gemm [128] and relu x3; gemm [96] was never measured
  const auto kernel = [](std::uint32_t correlation) {
    return record_of(counters_fixture(), TraceKind::kernel, correlation);
  };
  for (std::uint32_t gemm : {11u, 21u, 31u}) {       // 16.5 GFLOP, 60 MB, roof 30 us, in 40 us
    ASSERT_TRUE(rates.count(kernel(gemm))) << gemm;  // 11 was replayed: its configuration's 40 us
    EXPECT_NEAR(*rates.at(kernel(gemm)).flops_per_s, 16.5e9 / 40e-6, 1e3);
    EXPECT_NEAR(*rates.at(kernel(gemm)).bytes_per_s, 60e6 / 40e-6, 1e-3);
    EXPECT_NEAR(*rates.at(kernel(gemm)).roof_fraction, 0.75, 1e-12);
  }
  for (std::uint32_t relu : {13u, 23u, 33u}) {  // 1 MFLOP, 32 MB, roof 8 us, in 10 us
    EXPECT_NEAR(*rates.at(kernel(relu)).flops_per_s, 1e11, 1e-3);
    EXPECT_NEAR(*rates.at(kernel(relu)).bytes_per_s, 3.2e12, 1e-3);
    EXPECT_NEAR(*rates.at(kernel(relu)).roof_fraction, 0.8, 1e-12);
  }
  EXPECT_FALSE(rates.count(kernel(14)));
  const json trace = perfetto_trace(counters_fixture(), kProvenance, rates);
  EXPECT_EQ(with_ph(trace, "C").size(), 36u);  // 6 launches x 3 rates x (start, end)
  // Without roofs: no fraction of a roof, the rates still.
  const KernelRateMap bare = kernel_rates(roofline::analyze_profile(counters_fixture()));
  EXPECT_FALSE(bare.at(kernel(11)).roof_fraction);
  EXPECT_NEAR(*bare.at(kernel(11)).flops_per_s, 16.5e9 / 40e-6, 1e3);
}

// Processes 1 and 2 (threads 11 and 22) each launch one kernel with correlation
// id 7: "a" (5-55 us) and "b" (105-115 us), on device 0, stream 0, each record
// naming its process as the injection library records GPU work.
std::vector<TraceEvent> two_processes_launching_id_7() {
  using test::trace_event;
  std::vector<TraceEvent> events = {
      trace_event(TraceKind::runtime_api, "cudaLaunchKernel", 0, 5'000, 7, 1, 11),
      trace_event(TraceKind::kernel, "a", 5'000, 55'000, 7),
      trace_event(TraceKind::runtime_api, "cudaLaunchKernel", 100'000, 105'000, 7, 2, 22),
      trace_event(TraceKind::kernel, "b", 105'000, 115'000, 7)};
  events[1].process_id = 1;
  events[3].process_id = 2;
  return events;
}

// Each process numbers its calls from 1: two kernels of one correlation id, in
// two processes, keep their own rates on their own GPU's track.
TEST(PerfettoTrace, TwoProcessesKeepTheirOwnRatesForOneCorrelationId) {
  using test::trace_event;
  std::vector<TraceEvent> events = two_processes_launching_id_7();
  events[3].device = 1;
  events.push_back(trace_event(TraceKind::kernel_counters, "a", 5'000, 5'000, 7, 1, 11));
  events.back().details = {{"quantities", {{"fp32_flops", 1e9}}}};
  events.push_back(trace_event(TraceKind::kernel_counters, "b", 105'000, 105'000, 7, 2, 22));
  events.back().details = {{"quantities", {{"fp32_flops", 4e9}}}};
  const KernelRateMap rates = kernel_rates(roofline::analyze_profile(events));
  ASSERT_EQ(rates.size(), 2u);
  EXPECT_NEAR(*rates.at(1).flops_per_s, 1e9 / 50e-6, 1);
  EXPECT_NEAR(*rates.at(3).flops_per_s, 4e9 / 10e-6, 1);
  std::map<std::uint32_t, std::vector<double>> flops_by_gpu;
  for (const json& c : with_ph(perfetto_trace(events, kProvenance, rates), "C"))
    if (c["name"] == "FLOP/s (stream 0)")
      flops_by_gpu[c["pid"].get<std::uint32_t>()].push_back(c["args"]["value"].get<double>());
  ASSERT_EQ(flops_by_gpu.size(), 2u);
  EXPECT_EQ(flops_by_gpu.begin()->second, (std::vector<double>{1e9 / 50e-6, 0.0}));
  EXPECT_EQ(flops_by_gpu.rbegin()->second, (std::vector<double>{4e9 / 10e-6, 0.0}));
}

// Two processes on one GPU both launch on their stream 7: a track each, named
// with its process, and a counter track each.
TEST(PerfettoTrace, TwoProcessesOnOneGpuGetATrackPerStreamEach) {
  std::vector<TraceEvent> events = two_processes_launching_id_7();
  events[1].stream = events[3].stream = 7;
  KernelRateMap rates;
  rates[1].flops_per_s = 1e12;
  rates[3].flops_per_s = 2e12;
  const json trace = perfetto_trace(events, kProvenance, rates);
  std::map<std::string, std::uint64_t> track_of;  // thread name -> tid on the GPU
  for (const json& m : with_ph(trace, "M"))
    if (m["name"] == "thread_name" && m["pid"] == 3)
      track_of[m["args"]["name"].get<std::string>()] = m["tid"].get<std::uint64_t>();
  ASSERT_EQ(track_of.size(), 2u);
  ASSERT_TRUE(track_of.count("Process 1, stream 7"));
  ASSERT_TRUE(track_of.count("Process 2, stream 7"));
  EXPECT_NE(track_of["Process 1, stream 7"], track_of["Process 2, stream 7"]);
  const std::vector<json> slices = with_ph(trace, "X");
  EXPECT_EQ((*find_named(slices, "a"))["tid"], track_of["Process 1, stream 7"]);
  EXPECT_EQ((*find_named(slices, "b"))["tid"], track_of["Process 2, stream 7"]);
  std::set<std::string> counters;
  for (const json& c : with_ph(trace, "C")) counters.insert(c["name"].get<std::string>());
  EXPECT_EQ(counters, (std::set<std::string>{"FLOP/s (process 1, stream 7)",
                                             "FLOP/s (process 2, stream 7)"}));
}

TEST(ProfileConsole, ModelColumnsWhereCountersExist) {
  const std::vector<ProfileTable> tables = profile_tables(counters_analysis(), "  ");
  ASSERT_EQ(tables.size(), 6u);  // kernels, copies, api, ranges, iterations, findings
  const ProfileTable& kernels = tables[0];
  // The model's columns, then the user's --metrics (the fixture's one, on gemm_kernel).
  EXPECT_EQ(tail(kernels.header, 8),
            (std::vector<std::string>{"Measured", "Covered", "Class", "Efficiency", "TC share",
                                      "Lower bound", "Headroom", "sm__cycles_elapsed.avg"}));
  using Cells = std::vector<std::string>;
  EXPECT_EQ(tail(kernels.rows[0], 8), (Cells{"1", "3 of 6", "compute_bound(tensor_core)", "75%",
                                             "97%", "90 us", "1.33x", "52.0 k"}));
  EXPECT_EQ(tail(kernels.rows[1], 8),
            (Cells{"1", "3 of 3", "memory_bound(dram)", "80%", "0%", "24 us", "1.25x", "-"}));
  EXPECT_EQ(tail(kernels.rows[2], 8), (Cells{"0", "-", "-", "-", "-", "-", "-", "-"}));
  EXPECT_NE(kernels.caption.find("Your --metrics"), std::string::npos);

  const ProfileTable& ranges = tables[3];
  ASSERT_EQ(ranges.rows.size(), 4u);  // step, forward, layer0, layer1
  EXPECT_EQ(tail(ranges.rows[0], 7),
            (Cells{"2", "6 of 9", "compute_bound(tensor_core)", "60%", "97%", "114 us", "4.21x"}));
  EXPECT_EQ(tail(ranges.rows[1], 1), (Cells{"2.63x"}));
  EXPECT_EQ(tail(ranges.rows[2], 7),
            (Cells{"1", "3 of 3", "compute_bound(tensor_core)", "75%", "97%", "90 us", "1.27x"}));
  EXPECT_EQ(tail(ranges.rows[3], 7),
            (Cells{"1", "3 of 6", "memory_bound(dram)", "80%", "0%", "24 us", "6.25x"}));

  const ProfileTable& iterations = tables[4];
  EXPECT_EQ(tail(iterations.rows[0], 4), (Cells{"30 us", "20 us", "2", "9.0 us"}));
  EXPECT_EQ(tail(iterations.rows[1], 4), (Cells{"30 us", "20 us", "0", "0"}));
  EXPECT_NE(iterations.caption.find("Over all iterations: 90 us within the roofs, 60 us lost"),
            std::string::npos)
      << iterations.caption;

  EXPECT_EQ(tables[5].rows[1],
            (Cells{"step/forward/layer0: Tensor-Core-bound at 75% of the roof; 24% of step"}));

  const std::string text = cli::profile_text(counters_analysis(), kProvenance, 0);
  EXPECT_NE(text.find("Counters: 3 measured launches (1 tied to no kernel record, left out); "
                      "roofs of run 1. The model covers 6 of 10 kernel launches (2 measured); "
                      "their lower bound 114 us, the program's span 670 us: headroom 5.88x."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  step/forward/layer1: HBM-bound at 80% of the roof; 31% of step (3 of "
                      "its 6 kernel launches without counters)\n"),
            std::string::npos)
      << text;
  // Without roofs: the counters' numbers, no class, and the fix named.
  const std::string bare =
      cli::profile_text(roofline::analyze_profile(counters_fixture()), kProvenance, 0);
  EXPECT_NE(bare.find("measure the roofs with `timeroof ceilings --db FILE`"), std::string::npos)
      << bare;
  EXPECT_EQ(bare.find("compute_bound"), std::string::npos) << bare;
}

TEST(ProfileReport, RooflinesOfRangesAndKernels) {
  const ProfileReport report = render_profile_report(counters_fixture(), kProvenance, test_roofs());
  const test::XmlCheck xml = test::check_xml(report.html);
  EXPECT_TRUE(xml.ok) << xml.error;
  for (const std::string& text :
       {std::string("Rooflines of the ranges and kernels"),
        std::string("Hierarchical Roofline: ranges and kernels"),
        std::string("Time-based roofline: ranges and kernels"), std::string("Findings"),
        std::string("layer0: Tensor-Core-bound at 75% of the roof; 24% of step")}) {  // "/" breaks
    EXPECT_NE(report.html.find(text), std::string::npos) << text;
  }
  EXPECT_NE(report.markdown.find("Rooflines of the ranges and kernels"), std::string::npos);
  EXPECT_NE(
      report.markdown.find("| step/forward/layer1: HBM-bound at 80% of the roof; 31% of step"),
      std::string::npos)
      << report.markdown;
  // No roofs, no charts; a trace without counters, neither.
  EXPECT_EQ(render_profile_report(counters_fixture(), kProvenance).html.find("Rooflines of the"),
            std::string::npos);
  EXPECT_EQ(render_profile_report(fixture(), kProvenance, test_roofs()).html.find("Findings"),
            std::string::npos);
}

}  // namespace
}  // namespace timeroof::plots
