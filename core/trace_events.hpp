// What `timeroof profile -- CMD` records of a program (issue 17): one flat record
// per traced call, copy, kernel or NVTX range, in the order and clock CUPTI gives
// them. The injection library writes these as JSON lines (the journal) while the
// program runs; the store keeps them per run (table trace_events); the Perfetto
// export and the profile analysis read them. Plain C++, no CUDA: every layer may
// use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace timeroof {

// The record's kind, with one spelling each (stored, exported: never change one):
// "kernel", "memcpy", "memset", "runtime_api", "driver_api", "sync",
// "nvtx_range", "nvtx_mark", "kernel_counters".
enum class TraceKind {
  kernel,
  memcpy,
  memset,
  runtime_api,
  driver_api,
  sync,
  nvtx_range,
  nvtx_mark,
  // The hardware counters of one selected kernel launch (kernel replay), written
  // by the injection library when the launch returns; tied to its `kernel` record
  // by (process_id, correlation_id). A host-side record: start_ns/end_ns span the
  // launch call including its replay passes; device is the kernel's device.
  kernel_counters
};

const char* to_string(TraceKind kind);
std::optional<TraceKind> find_trace_kind(std::string_view text);
// Runs on a GPU (kernel, memcpy, memset) rather than on a host thread.
bool on_gpu(TraceKind kind);

struct TraceEvent {
  TraceKind kind = TraceKind::kernel;
  // kernel: demangled name; memcpy: "HtoD", "DtoH", "DtoD", "HtoH", "PtoP";
  // memset: "memset"; API: the function ("cudaLaunchKernel", "cuMemcpyHtoD_v2");
  // sync: the synchronization type; NVTX: the range's or mark's message.
  std::string name;
  // Nanoseconds in CUPTI's timestamp domain (cuptiGetTimestamp), one clock for
  // host and GPU records. A mark has end_ns == start_ns.
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  // GPU records: the device ordinal and CUPTI's stream id; 0 for host records.
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  // Ties a GPU record to the API call that issued it (CUPTI's correlation id); 0
  // where there is none (NVTX).
  std::uint32_t correlation_id = 0;
  // Host records: the process and thread that made the call or pushed the range.
  // GPU records: the process that launched them (no thread); 0 in traces recorded
  // before they carried it. Correlation ids are unique only within a process.
  std::uint32_t process_id = 0;
  std::uint32_t thread_id = 0;
  // memcpy and memset: bytes moved or set; 0 otherwise.
  std::uint64_t bytes = 0;
  // Per kind, by name: kernel {grid: [x,y,z], block: [x,y,z], registers,
  // static_shared_bytes, dynamic_shared_bytes}; memcpy {src_kind, dst_kind};
  // API {cbid, return_value}; NVTX {domain, category, color, range_id};
  // kernel_counters {chip, passes, quantities: {quantity name
  // (core/quantities.hpp): value}, metrics: {raw CUPTI name: value} for the
  // user's extra metrics}. Readers take what they know and keep the rest.
  nlohmann::json details = nlohmann::json::object();

  std::uint64_t duration_ns() const { return end_ns >= start_ns ? end_ns - start_ns : 0; }
  bool operator==(const TraceEvent&) const = default;
};

// JSON form (one journal line, one element of an export's "trace" array), read
// with the same checks as every other stored struct: each field exact in its
// type's range, a wrong or missing one named by its key (core/json_io.cpp).
void to_json(nlohmann::json& j, const TraceEvent& v);
void from_json(const nlohmann::json& j, TraceEvent& v);

// One journal line appended to `out`: exactly to_json's JSON as nlohmann dumps it
// (keys sorted, invalid UTF-8 replaced), then a newline. The injection library writes
// one per record on the traced program's host: this builds no JSON object for the
// record (only `details` goes through nlohmann): 5-7x less CPU than dumping to_json's
// (bench/journal_lines, H200 host).
void append_journal_line(std::string& out, const TraceEvent& event);

// A CUDA library a profiled process had loaded when it ended, with the version the
// library itself reports: the program's kernels come from its own cuDNN and cuBLAS
// (PyTorch's wheels bring theirs), not from timeroof's. The injection library
// writes each process's list as DIR/libraries-<pid>.json (a JSON array) at exit;
// `timeroof profile` keeps them in the run's spec (profile.libraries).
struct LoadedLibrary {
  std::string name;  // the family: cuda (the driver), cudart, cublas, cublasLt, cudnn, nccl, cupti
  std::string path;  // as the loader opened it
  std::string version;  // as the library reports it ("9.19.0"); empty where it has no call for it
  std::uint32_t process_id = 0;
  bool operator==(const LoadedLibrary&) const = default;
};

void to_json(nlohmann::json& j, const LoadedLibrary& v);
void from_json(const nlohmann::json& j, LoadedLibrary& v);

}  // namespace timeroof
