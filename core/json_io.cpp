#include "core/json_io.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "timeroof/version.hpp"

namespace timeroof {

using nlohmann::json;

namespace {

template <typename T>
void put(json& j, const char* key, const std::optional<T>& value) {
  j[key] = value ? json(*value) : json(nullptr);
}

template <typename T>
constexpr bool kExactInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// An integer read exactly: a value outside T's range, or not an integer, is
// refused, never wrapped (an import once read repeats 4294967303 as 7 and
// launches 1e20 as INT64_MIN).
template <typename T>
T exact_integer(const json& field, const std::string& key) {
  using Limits = std::numeric_limits<T>;
  if (field.is_number_unsigned()) {
    const auto value = field.get<std::uint64_t>();
    if (value <= static_cast<std::uint64_t>(Limits::max())) return static_cast<T>(value);
  } else if (field.is_number_integer()) {
    const auto value = field.get<std::int64_t>();
    if (value >= static_cast<std::int64_t>(Limits::min()) &&
        (value < 0 ||
         static_cast<std::uint64_t>(value) <= static_cast<std::uint64_t>(Limits::max())))
      return static_cast<T>(value);
  } else if (!field.is_number()) {
    return field.get<T>();  // the library's type error names the type
  }
  throw usage_error(key + " = " + field.dump() + " is not an integer from " +
                    std::to_string(Limits::min()) + " to " + std::to_string(Limits::max()));
}

template <typename T>
void get(const json& j, const char* key, std::optional<T>& value) {
  const json& field = j.at(key);
  if (field.is_null()) {
    value = std::nullopt;
  } else if constexpr (kExactInteger<T>) {
    value = exact_integer<T>(field, key);
  } else {
    value = field.get<T>();
  }
}

template <typename T>
void get(const json& j, const char* key, T& value) {
  if constexpr (kExactInteger<T>)
    value = exact_integer<T>(j.at(key), key);
  else
    j.at(key).get_to(value);
}

// A fixed-size integer array (grid, block): exactly N integers, each exact.
template <std::size_t N>
void get(const json& j, const char* key, std::array<int, N>& value) {
  const json& field = j.at(key);
  if (!field.is_array() || field.size() != N)
    throw usage_error(std::string(key) + " = " + field.dump() + " is not " + std::to_string(N) +
                      " integers");
  for (std::size_t i = 0; i < N; ++i)
    value[i] = exact_integer<int>(field[i], std::string(key) + "[" + std::to_string(i) + "]");
}

}  // namespace

void to_json(json& j, const SoftwareVersions& v) {
  j = json{{"driver", v.driver}, {"cuda_driver", v.cuda_driver}, {"cuda_runtime", v.cuda_runtime},
           {"cudnn", v.cudnn},   {"cublas", v.cublas},           {"cupti", v.cupti}};
}
void from_json(const json& j, SoftwareVersions& v) {
  get(j, "driver", v.driver);
  get(j, "cuda_driver", v.cuda_driver);
  get(j, "cuda_runtime", v.cuda_runtime);
  get(j, "cudnn", v.cudnn);
  get(j, "cublas", v.cublas);
  get(j, "cupti", v.cupti);
}

void to_json(json& j, const CounterAccess& v) {
  j = json{
      {"available", v.available}, {"reason", v.reason}, {"fix", v.fix}, {"evidence", v.evidence}};
  if (v.busy) j["busy"] = true;  // only where it happened: older documents stay as they were
}
void from_json(const json& j, CounterAccess& v) {
  get(j, "available", v.available);
  get(j, "reason", v.reason);
  get(j, "fix", v.fix);
  get(j, "evidence", v.evidence);
  v.busy = false;
  if (j.contains("busy")) get(j, "busy", v.busy);
}

void to_json(json& j, const GpuInfo& v) {
  j = json{{"index", v.index},
           {"name", v.name},
           {"chip", v.chip},
           {"uuid", v.uuid},
           {"pci_bus_id", v.pci_bus_id},
           {"compute_capability", {v.cc_major, v.cc_minor}},
           {"sm_count", v.sm_count},
           {"l2_bytes", v.l2_bytes},
           {"memory_bytes", v.memory_bytes},
           {"memory_bus_bits", v.memory_bus_bits},
           {"shared_per_sm_bytes", v.shared_per_sm_bytes},
           {"versions", v.versions},
           {"counters", v.counters}};
  put(j, "sm_clock_max_hz", v.sm_clock_max_hz);
  put(j, "sm_clock_base_hz", v.sm_clock_base_hz);
  put(j, "sm_clock_current_hz", v.sm_clock_current_hz);
  put(j, "mem_clock_max_hz", v.mem_clock_max_hz);
  put(j, "mem_clock_current_hz", v.mem_clock_current_hz);
}
void from_json(const json& j, GpuInfo& v) {
  get(j, "index", v.index);
  get(j, "name", v.name);
  get(j, "chip", v.chip);
  get(j, "uuid", v.uuid);
  get(j, "pci_bus_id", v.pci_bus_id);
  std::array<int, 2> cc{};
  get(j, "compute_capability", cc);
  v.cc_major = cc[0];
  v.cc_minor = cc[1];
  get(j, "sm_count", v.sm_count);
  get(j, "l2_bytes", v.l2_bytes);
  get(j, "memory_bytes", v.memory_bytes);
  get(j, "memory_bus_bits", v.memory_bus_bits);
  get(j, "shared_per_sm_bytes", v.shared_per_sm_bytes);
  get(j, "versions", v.versions);
  get(j, "counters", v.counters);
  get(j, "sm_clock_max_hz", v.sm_clock_max_hz);
  get(j, "sm_clock_base_hz", v.sm_clock_base_hz);
  get(j, "sm_clock_current_hz", v.sm_clock_current_hz);
  get(j, "mem_clock_max_hz", v.mem_clock_max_hz);
  get(j, "mem_clock_current_hz", v.mem_clock_current_hz);
}

void to_json(json& j, const PowerConditions& v) {
  j = json{{"clock_limits", v.clock_limits}};
  put(j, "watts", v.watts);
  put(j, "joules_per_call", v.joules_per_call);
  put(j, "window_s", v.window_s);
  put(j, "power_limit_w", v.power_limit_w);
  put(j, "max_temperature_c", v.max_temperature_c);
}
// Every key may be missing: the store's rows from before schema 2 hold "{}".
void from_json(const json& j, PowerConditions& v) {
  if (!j.is_object()) throw usage_error("power = " + j.dump() + " is not an object");
  if (j.contains("clock_limits")) get(j, "clock_limits", v.clock_limits);
  for (auto [key, field] : {std::pair{"watts", &v.watts},
                            {"joules_per_call", &v.joules_per_call},
                            {"window_s", &v.window_s},
                            {"power_limit_w", &v.power_limit_w},
                            {"max_temperature_c", &v.max_temperature_c}})
    if (j.contains(key)) get(j, key, *field);
}

void to_json(json& j, const SustainedRoof& v) {
  j = json{{"measured", v.measured}, {"seconds", v.seconds}, {"power", v.power}};
  put(j, "sm_clock_hz", v.sm_clock_hz);
}
void from_json(const json& j, SustainedRoof& v) {
  get(j, "measured", v.measured);
  get(j, "seconds", v.seconds);
  get(j, "sm_clock_hz", v.sm_clock_hz);
  get(j, "power", v.power);
}

void to_json(json& j, const Ceiling& v) {
  j = json{{"name", v.name},
           {"kind", to_string(v.kind)},
           {"unit", v.unit},
           {"measured", v.measured},
           {"theoretical_source", v.theoretical_source},
           {"method", v.method},
           {"repeats", v.repeats},
           {"spread", v.spread}};
  put(j, "theoretical", v.theoretical);
  put(j, "sm_clock_hz", v.sm_clock_hz);
  put(j, "mem_clock_hz", v.mem_clock_hz);
  // Left out when empty, so documents of roofs measured without NVML, and every
  // export written before these fields, keep their bytes through import/export.
  if (v.power != PowerConditions{}) j["power"] = v.power;
  if (v.sustained) j["sustained"] = *v.sustained;
}
void from_json(const json& j, Ceiling& v) {
  get(j, "name", v.name);
  v.kind = ceiling_kind_from_string(j.at("kind").get<std::string>());
  get(j, "unit", v.unit);
  get(j, "measured", v.measured);
  get(j, "theoretical", v.theoretical);
  get(j, "theoretical_source", v.theoretical_source);
  get(j, "method", v.method);
  get(j, "repeats", v.repeats);
  get(j, "spread", v.spread);
  get(j, "sm_clock_hz", v.sm_clock_hz);
  get(j, "mem_clock_hz", v.mem_clock_hz);
  // Added within export schema 2: files written before carry neither.
  if (j.contains("power")) get(j, "power", v.power);
  if (j.contains("sustained")) get(j, "sustained", v.sustained);
}

void to_json(json& j, const WorkingSetSample& v) {
  j = json{{"bytes", v.bytes}, {"bytes_per_second", v.bytes_per_second}};
}
void from_json(const json& j, WorkingSetSample& v) {
  get(j, "bytes", v.bytes);
  get(j, "bytes_per_second", v.bytes_per_second);
}

void to_json(json& j, const CeilingSkip& v) {
  j = json{{"name", v.name}, {"reason", v.reason}, {"failed", v.failed}};
}
void from_json(const json& j, CeilingSkip& v) {
  get(j, "name", v.name);
  get(j, "reason", v.reason);
  get(j, "failed", v.failed);
}

void to_json(json& j, const Machine& v) {
  j = json{{"gpu", v.gpu},
           {"ceilings", v.ceilings},
           {"working_set", v.working_set},
           {"skipped", v.skipped}};
}
void from_json(const json& j, Machine& v) {
  get(j, "gpu", v.gpu);
  get(j, "ceilings", v.ceilings);
  get(j, "working_set", v.working_set);
  get(j, "skipped", v.skipped);
}

void to_json(json& j, const TimeStats& v) {
  j = json::object();
  j["median_s"] = v.median_s;
  put(j, "ci_low_s", v.ci_low_s);
  put(j, "ci_high_s", v.ci_high_s);
  j["spread"] = v.spread;
  if (v.mean_s) j["mean_s"] = *v.mean_s;  // absent, not null, where older runs lack it
  j["min_s"] = v.min_s;
  j["max_s"] = v.max_s;
  j["samples"] = v.samples;
  j["calls_per_sample"] = v.calls_per_sample;
  j["converged"] = v.converged;
}
void from_json(const json& j, TimeStats& v) {
  get(j, "median_s", v.median_s);
  get(j, "ci_low_s", v.ci_low_s);
  get(j, "ci_high_s", v.ci_high_s);
  get(j, "spread", v.spread);
  if (j.contains("mean_s")) get(j, "mean_s", v.mean_s);  // added within schema 2
  get(j, "min_s", v.min_s);
  get(j, "max_s", v.max_s);
  get(j, "samples", v.samples);
  get(j, "calls_per_sample", v.calls_per_sample);
  get(j, "converged", v.converged);
}

void to_json(json& j, const Timing& v) {
  j = json::object();
  put(j, "call", v.call);
  put(j, "stream", v.stream);
  put(j, "graph", v.graph);
  put(j, "issue", v.issue);
  j["graph_unavailable"] = v.graph_unavailable;
  put(j, "kernel_time_s", v.kernel_time_s);
  put(j, "launches", v.launches);
  put(j, "api_time_s", v.api_time_s);
  put(j, "launch_gap_s", v.launch_gap_s);
  put(j, "h2d_bytes", v.h2d_bytes);
  put(j, "h2d_time_s", v.h2d_time_s);
  put(j, "d2h_bytes", v.d2h_bytes);
  put(j, "d2h_time_s", v.d2h_time_s);
}
void from_json(const json& j, Timing& v) {
  if (j.contains("call")) {
    get(j, "call", v.call);
    get(j, "stream", v.stream);
    get(j, "graph", v.graph);
    get(j, "issue", v.issue);
    get(j, "graph_unavailable", v.graph_unavailable);
  } else {
    // Schema 1 measured one time, events around each synchronized call: T_call,
    // without a confidence interval.
    std::optional<double> median, spread;
    get(j, "wall_median_s", median);
    get(j, "wall_spread", spread);
    if (median) {
      TimeStats call;
      call.median_s = call.min_s = call.max_s = *median;
      call.spread = spread.value_or(0);
      get(j, "repeats", call.samples);
      v.call = call;
    }
  }
  get(j, "kernel_time_s", v.kernel_time_s);
  get(j, "launches", v.launches);
  get(j, "api_time_s", v.api_time_s);
  get(j, "launch_gap_s", v.launch_gap_s);
  get(j, "h2d_bytes", v.h2d_bytes);
  get(j, "h2d_time_s", v.h2d_time_s);
  get(j, "d2h_bytes", v.d2h_bytes);
  get(j, "d2h_time_s", v.d2h_time_s);
}

void to_json(json& j, const KernelRecord& v) {
  j = json{{"name", v.name},
           {"grid", v.grid},
           {"block", v.block},
           {"duration_s", v.duration_s},
           {"metrics", v.metrics}};
}
void from_json(const json& j, KernelRecord& v) {
  get(j, "name", v.name);
  get(j, "grid", v.grid);
  get(j, "block", v.block);
  get(j, "duration_s", v.duration_s);
  get(j, "metrics", v.metrics);
}

void to_json(json& j, const Point& v) {
  j = json{{"seq", v.seq},
           {"sweep", v.sweep},
           {"op", v.op},
           {"params", v.params},
           {"precision", v.precision},
           {"math_mode", v.math_mode},
           {"algorithm", v.algorithm},
           {"flops", v.flops},
           {"min_bytes", v.min_bytes},
           {"status", to_string(v.status)},
           {"reason", v.reason},
           {"timing", v.timing},
           {"counters", v.counters},
           {"kernels", v.kernels},
           {"details", v.details}};
}
void from_json(const json& j, Point& v) {
  get(j, "seq", v.seq);
  get(j, "sweep", v.sweep);
  get(j, "op", v.op);
  get(j, "params", v.params);
  get(j, "precision", v.precision);
  get(j, "math_mode", v.math_mode);
  get(j, "algorithm", v.algorithm);
  get(j, "flops", v.flops);
  get(j, "min_bytes", v.min_bytes);
  v.status = point_status_from_string(j.at("status").get<std::string>());
  get(j, "reason", v.reason);
  get(j, "timing", v.timing);
  get(j, "counters", v.counters);
  get(j, "kernels", v.kernels);
  get(j, "details", v.details);
}

void to_json(json& j, const Run& v) {
  j = json{{"uuid", v.uuid},
           {"tool_version", v.tool_version},
           {"git_sha", v.git_sha},
           {"command_line", v.command_line},
           {"host", v.host},
           {"started_at", v.started_at},
           {"finished_at", v.finished_at},
           {"status", v.status},
           {"spec", v.spec},
           {"machine", v.machine}};
}
void from_json(const json& j, Run& v) {
  get(j, "uuid", v.uuid);
  get(j, "tool_version", v.tool_version);
  get(j, "git_sha", v.git_sha);
  get(j, "command_line", v.command_line);
  get(j, "host", v.host);
  get(j, "started_at", v.started_at);
  get(j, "finished_at", v.finished_at);
  get(j, "status", v.status);
  get(j, "spec", v.spec);
  get(j, "machine", v.machine);
}

void to_json(json& j, const RunRecord& v) {
  to_json(j, v.run);
  j["points"] = v.points;
}
void from_json(const json& j, RunRecord& v) {
  from_json(j, v.run);
  get(j, "points", v.points);
}

namespace {

template <typename Input>
json parse_bounded(Input&& input, const std::string& source, const std::string& fix) {
  // nlohmann's parser is iterative; its callback sees each value's depth, so the
  // limit stops the parse before anything deep is built.
  const json::parser_callback_t bound = [&](int depth, json::parse_event_t, json&) {
    if (depth >= kMaxJsonDepth)  // depth counts from 0: at most kMaxJsonDepth levels
      throw usage_error(source + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                        " levels, which no timeroof document is; " + fix);
    return true;
  };
  try {
    return json::parse(std::forward<Input>(input), bound);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    throw usage_error(source + " is not valid JSON (" + e.what() + "); " + fix);
  }
}

}  // namespace

json parse_untrusted_json(std::istream& input, const std::string& source, const std::string& fix) {
  return parse_bounded(input, source, fix);
}

json parse_untrusted_json(const std::string& text, const std::string& source,
                          const std::string& fix) {
  return parse_bounded(text, source, fix);
}

json export_document(const std::vector<RunRecord>& runs) {
  return json{{"format", kExportFormat},
              {"schema_version", kExportSchemaVersion},
              {"exported_by", {{"tool_version", kToolVersion}, {"git_sha", kGitSha}}},
              {"runs", runs}};
}

std::vector<RunRecord> parse_export_document(const json& doc, const std::string& source) {
  const auto format = doc.is_object() ? doc.find("format") : doc.end();
  if (!doc.is_object() || format == doc.end() || *format != kExportFormat) {
    throw usage_error(source + ": not a timeroof export (no \"format\": \"" + kExportFormat +
                      "\"); pass a file written by `timeroof export --json`");
  }
  const auto schema = doc.find("schema_version");
  if (schema == doc.end() || !schema->is_number_integer() || *schema < 1) {
    throw usage_error(source + ": invalid schema_version " +
                      (schema == doc.end() ? std::string("(missing)") : schema->dump()) +
                      "; pass a file written by `timeroof export`");
  }
  if (*schema > kExportSchemaVersion) {
    throw usage_error(source + ": written by a newer timeroof (schema " + schema->dump() +
                      ", this build reads up to " + std::to_string(kExportSchemaVersion) +
                      "); upgrade timeroof to read it");
  }
  try {
    return doc.at("runs").get<std::vector<RunRecord>>();
  } catch (const json::exception& e) {
    throw usage_error(source + ": malformed timeroof export: " + e.what());
  } catch (const Error& e) {
    throw usage_error(source + ": malformed timeroof export: " + e.what());
  }
}

}  // namespace timeroof
