// What writing one journal line costs the traced program's host (issue 17: the
// injection library converts CUPTI's buffers on a thread of the program's process):
// append_journal_line against dumping to_json's JSON, the way it was written before,
// on the three records a PyTorch iteration is made of (a kernel with a cuDNN-length
// name, an NVTX range, a launch call). Prints microseconds per record and the ratio;
// checks that both ways write the same bytes.
//
//   journal_lines [--records N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_main.hpp"
#include "core/error.hpp"
#include "core/trace_events.hpp"

namespace timeroof {
namespace {

std::vector<TraceEvent> iteration_records() {
  TraceEvent kernel;
  kernel.kind = TraceKind::kernel;
  kernel.name =
      "void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true, "
      "(cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __half "
      "const*, __half*)";
  kernel.start_ns = 1'764'000'000'123'456;
  kernel.end_ns = kernel.start_ns + 8'192;
  kernel.stream = 7;
  kernel.correlation_id = 123'456;
  kernel.process_id = 4'242;
  kernel.details = {{"grid", {784, 1, 4}},
                    {"block", {256, 1, 1}},
                    {"registers", 32},
                    {"static_shared_bytes", 0},
                    {"dynamic_shared_bytes", 4'352}};
  TraceEvent range;
  range.kind = TraceKind::nvtx_range;
  range.name = "layer3.1.conv2";
  range.start_ns = kernel.start_ns - 20'000;
  range.end_ns = kernel.start_ns + 9'000;
  range.process_id = 4'242;
  range.thread_id = 4'242;
  range.details = {{"domain", ""}, {"range_id", 9'876}};
  TraceEvent launch;
  launch.kind = TraceKind::runtime_api;
  launch.name = "cudaLaunchKernel";
  launch.start_ns = kernel.start_ns - 6'000;
  launch.end_ns = kernel.start_ns - 2'500;
  launch.correlation_id = kernel.correlation_id;
  launch.process_id = 4'242;
  launch.thread_id = 4'242;
  launch.details = {{"cbid", 211}, {"return_value", 0}};
  return {kernel, range, launch};
}

template <typename Write>
double microseconds_per_record(const TraceEvent& event, int records, Write write) {
  std::string lines;
  std::size_t bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < records; ++i) {
    write(lines, event);
    if (lines.size() > (std::size_t{1} << 20)) {  // the injection library writes per buffer
      bytes += lines.size();
      lines.clear();
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return (bytes + lines.size() > 0 ? seconds : 0.0) * 1e6 /
         records;  // kept: the loop is not elided
}

int run(int argc, char** argv) {
  int records = 200'000;
  if (argc == 3 && std::string_view(argv[1]) == "--records") records = std::atoi(argv[2]);
  if ((argc != 1 && argc != 3) || records <= 0)
    throw usage_error("usage: journal_lines [--records N] (N > 0)");
  const auto dumped = [](std::string& out, const TraceEvent& e) {
    out += nlohmann::json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += '\n';
  };
  const auto appended = [](std::string& out, const TraceEvent& e) { append_journal_line(out, e); };
  std::printf("%-12s %12s %12s %7s\n", "record", "dump us", "append us", "ratio");
  for (const TraceEvent& event : iteration_records()) {
    std::string one, other;
    dumped(one, event);
    appended(other, event);
    if (one != other) {
      std::fprintf(stderr, "journal_lines: the two ways wrote different lines:\n%s%s", one.c_str(),
                   other.c_str());
      return 1;
    }
    const double dump_us = microseconds_per_record(event, records, dumped);
    const double append_us = microseconds_per_record(event, records, appended);
    std::printf("%-12s %12.3f %12.3f %7.2f\n", to_string(event.kind), dump_us, append_us,
                dump_us / append_us);
  }
  return 0;
}

}  // namespace
}  // namespace timeroof

int main(int argc, char** argv) {
  return timeroof::bench_main("journal_lines", timeroof::run, argc, argv);
}
