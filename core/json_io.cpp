#include "core/json_io.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/trace_events.hpp"
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

// A field of a document that cannot be read, by its key path from the document's
// top ("runs[0].points[3].timing.call.median_s") and what is wrong with it in
// the tool's words (never the JSON library's): each get() below that a nested
// one fails in puts its own key in front.
class FieldError : public Error {
 public:
  FieldError(std::string path, std::string problem)
      : Error(ExitCode::usage, (path.empty() ? std::string("the value") : path) + " " + problem),
        path_(std::move(path)),
        problem_(std::move(problem)) {}
  FieldError within(const std::string& key) const {
    if (path_.empty()) return FieldError(key, problem_);
    return FieldError(key + (path_.front() == '[' ? "" : ".") + path_, problem_);
  }

 private:
  std::string path_;
  std::string problem_;
};

// "a string", "an array", ... for what a field holds.
std::string json_type_text(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number with a fraction";
    default:
      return "not a JSON value";
  }
}

// What a field of C++ type T must hold.
template <typename T>
std::string expected_text() {
  if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else if constexpr (std::is_same_v<T, bool>)
    return "true or false";
  else if constexpr (kExactInteger<T>)
    return "an integer";
  else if constexpr (std::is_floating_point_v<T>)
    return "a number";
  else if constexpr (std::is_same_v<T, std::map<std::string, double>>)
    return "an object of numbers";
  else
    return "an object";
}

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
    throw FieldError(key, "is " + json_type_text(field) + ", not an integer");
  }
  throw FieldError(key, "= " + field.dump() + " is not an integer from " +
                            std::to_string(Limits::min()) + " to " + std::to_string(Limits::max()));
}

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};
template <typename T>
struct IsStringMap : std::false_type {};
template <typename T>
struct IsStringMap<std::map<std::string, T>> : std::true_type {};

// j[key] converted to T; a FieldError naming the key (and, from nested objects
// and arrays, the path below it) where it is missing or holds something else.
template <typename T>
void read_field(const json& j, const std::string& key, T& value);

template <typename T>
void convert(const json& field, const std::string& key, T& value) {
  if constexpr (kExactInteger<T>) {
    value = exact_integer<T>(field, key);
  } else if constexpr (IsVector<T>::value) {
    if (!field.is_array()) throw FieldError(key, "is " + json_type_text(field) + ", not an array");
    value.clear();
    value.resize(field.size());
    for (std::size_t i = 0; i < field.size(); ++i) {
      try {
        convert(field[i], "", value[i]);
      } catch (const FieldError& e) {
        throw e.within(key + "[" + std::to_string(i) + "]");
      }
    }
  } else if constexpr (IsStringMap<T>::value) {
    if (!field.is_object())
      throw FieldError(key, "is " + json_type_text(field) + ", not " + expected_text<T>());
    value.clear();
    for (const auto& [name, item] : field.items()) {
      try {
        convert(item, "", value[name]);
      } catch (const FieldError& e) {
        throw e.within(key + "." + name);
      }
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    // Only numbers: the library would read true as 1.
    if (!field.is_number())
      throw FieldError(key, "is " + json_type_text(field) + ", not " + expected_text<T>());
    value = field.get<T>();
  } else if constexpr (std::is_same_v<T, json>) {
    value = field;
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>) {
    if (std::is_same_v<T, std::string> ? !field.is_string() : !field.is_boolean())
      throw FieldError(key, "is " + json_type_text(field) + ", not " + expected_text<T>());
    value = field.get<T>();
  } else {  // a struct of core/results.hpp, through its from_json above
    if (!field.is_object())
      throw FieldError(key, "is " + json_type_text(field) + ", not " + expected_text<T>());
    try {
      from_json(field, value);  // reads its own fields with read_field
    } catch (const FieldError& e) {
      throw key.empty() ? e : e.within(key);
    }
  }
}

template <typename T>
void read_field(const json& j, const std::string& key, T& value) {
  if (!j.is_object()) throw FieldError(key, "cannot be read: its parent is not an object");
  const auto field = j.find(key);
  if (field == j.end()) throw FieldError(key, "is missing");
  convert(*field, key, value);
}

template <typename T>
void get(const json& j, const char* key, std::optional<T>& value) {
  if (j.is_object() && j.contains(key) && j.at(key).is_null()) {
    value = std::nullopt;
    return;
  }
  T present{};
  read_field(j, key, present);
  value = std::move(present);
}

template <typename T>
void get(const json& j, const char* key, T& value) {
  read_field(j, key, value);
}

// A fixed-size integer array (grid, block): exactly N integers, each exact.
template <std::size_t N>
void get(const json& j, const char* key, std::array<int, N>& value) {
  std::vector<int> items;
  read_field(j, key, items);
  if (items.size() != N)
    throw FieldError(
        key, "holds " + std::to_string(items.size()) + " integers, not " + std::to_string(N));
  std::copy(items.begin(), items.end(), value.begin());
}

// A text field read as one of the names of an enum: `parse` throws a usage error
// for an unknown name, given here with the field's key.
template <typename Parse>
auto get_named(const json& j, const char* key, Parse parse) {
  std::string text;
  read_field(j, key, text);
  try {
    return parse(text);
  } catch (const FieldError&) {
    throw;
  } catch (const Error& e) {
    throw FieldError(key, "= \"" + text + "\": " + e.what());
  }
}

}  // namespace

// One to_json / from_json pair per struct, written out field by field on purpose
// (`duplicates` pairs them by shape): get() gives each field its key path in
// errors (issue 16) and reads optional and missing fields, which nlohmann's
// NLOHMANN_DEFINE_TYPE macros would not.
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
  if (!j.is_object()) throw FieldError("", "is " + json_type_text(j) + ", not an object");
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
  v.kind = get_named(j, "kind", ceiling_kind_from_string);
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

void to_json(json& j, const TraceEvent& v) {
  j = json{{"kind", to_string(v.kind)},
           {"name", v.name},
           {"start_ns", v.start_ns},
           {"end_ns", v.end_ns},
           {"device", v.device},
           {"stream", v.stream},
           {"correlation_id", v.correlation_id},
           {"process_id", v.process_id},
           {"thread_id", v.thread_id},
           {"bytes", v.bytes},
           {"details", v.details}};
}

namespace {

// Bytes nlohmann's serializer writes as they are (ensure_ascii off): printable ASCII
// other than the quote and the backslash.
bool needs_no_escaping(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte >= 0x20 && byte < 0x7f && byte != '"' && byte != '\\';
  });
}

void append_json_string(std::string& out, const std::string& text) {
  if (needs_no_escaping(text)) {
    out += '"';
    out += text;
    out += '"';
  } else {  // escapes and replacement exactly as nlohmann does them
    out += json(text).dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

void append_json_number(std::string& out, std::uint64_t value) {
  std::array<char, std::numeric_limits<std::uint64_t>::digits10 + 1> digits{};
  // Twenty digits hold any uint64_t: to_chars cannot fail here.
  char* end = std::to_chars(digits.data(), digits.data() + digits.size(), value).ptr;
  out.append(digits.data(), end);
}

}  // namespace

void append_journal_line(std::string& out, const TraceEvent& event) {
  // The keys in nlohmann's order (its objects sort them), so that the line equals the
  // dump of to_json's JSON byte for byte (tests/cpu/profile_journal_test.cpp).
  out += "{\"bytes\":";
  append_json_number(out, event.bytes);
  out += ",\"correlation_id\":";
  append_json_number(out, event.correlation_id);
  out += ",\"details\":";
  out += event.details.dump(-1, ' ', false, json::error_handler_t::replace);
  out += ",\"device\":";
  append_json_number(out, event.device);
  out += ",\"end_ns\":";
  append_json_number(out, event.end_ns);
  out += ",\"kind\":\"";
  out += to_string(event.kind);
  out += "\",\"name\":";
  append_json_string(out, event.name);
  out += ",\"process_id\":";
  append_json_number(out, event.process_id);
  out += ",\"start_ns\":";
  append_json_number(out, event.start_ns);
  out += ",\"stream\":";
  append_json_number(out, event.stream);
  out += ",\"thread_id\":";
  append_json_number(out, event.thread_id);
  out += "}\n";
}

void from_json(const json& j, TraceEvent& v) {
  v.kind = get_named(j, "kind", [](const std::string& text) {
    const auto kind = find_trace_kind(text);
    if (!kind)
      throw usage_error(
          "unknown trace record kind; allowed: kernel, memcpy, memset, "
          "runtime_api, driver_api, sync, nvtx_range, nvtx_mark");
    return *kind;
  });
  get(j, "name", v.name);
  get(j, "start_ns", v.start_ns);
  get(j, "end_ns", v.end_ns);
  get(j, "device", v.device);
  get(j, "stream", v.stream);
  get(j, "correlation_id", v.correlation_id);
  get(j, "process_id", v.process_id);
  get(j, "thread_id", v.thread_id);
  get(j, "bytes", v.bytes);
  get(j, "details", v.details);
  if (!v.details.is_object()) throw FieldError("details", "is not an object");
  if (v.end_ns < v.start_ns) throw FieldError("end_ns", "is before start_ns");
}

void to_json(json& j, const LoadedLibrary& v) {
  j = json{
      {"name", v.name}, {"path", v.path}, {"version", v.version}, {"process_id", v.process_id}};
}
void from_json(const json& j, LoadedLibrary& v) {
  get(j, "name", v.name);
  get(j, "path", v.path);
  get(j, "version", v.version);
  get(j, "process_id", v.process_id);
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
  v.status = get_named(j, "status", point_status_from_string);
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
  if (!v.trace.empty()) j["trace"] = v.trace;  // only profile runs have one
}
void from_json(const json& j, RunRecord& v) {
  from_json(j, v.run);
  get(j, "points", v.points);
  if (j.contains("trace")) get(j, "trace", v.trace);
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
    throw usage_error(source + " is not valid JSON (" + json_error_text(e) + "); " + fix);
  }
}

}  // namespace

template <typename T>
T read_untrusted(const json& value) {
  T out{};
  convert(value, "", out);
  return out;
}
template GpuInfo read_untrusted<GpuInfo>(const json&);
template Timing read_untrusted<Timing>(const json&);
template std::map<std::string, double> read_untrusted<std::map<std::string, double>>(const json&);
template PowerConditions read_untrusted<PowerConditions>(const json&);
template SustainedRoof read_untrusted<SustainedRoof>(const json&);

std::string json_error_text(const json::exception& error) {
  const std::string text = error.what();
  const std::size_t id_end = text.rfind('[', 0) == 0 ? text.find("] ") : std::string::npos;
  return id_end == std::string::npos ? text : text.substr(id_end + 2);
}

json parse_untrusted_json(std::istream& input, const std::string& source, const std::string& fix) {
  return parse_bounded(input, source, fix);
}

json parse_untrusted_json(const std::string& text, const std::string& source,
                          const std::string& fix) {
  return parse_bounded(text, source, fix);
}

namespace {

// The unit-labelled twins of the time-valued counters in a counters or metrics
// map (export only; import drops them): "duration" is seconds (the quantity
// catalog's unit), CUPTI's "gpu__time_duration.*" nanoseconds.
bool is_cupti_time(const std::string& key) {
  return key.starts_with("gpu__time_duration") && !key.ends_with("_s") && !key.ends_with("_ns");
}

void add_time_twins(json& counters) {
  if (!counters.is_object()) return;
  json twins = json::object();
  for (auto it = counters.begin(); it != counters.end(); ++it) {
    if (!it.value().is_number()) continue;
    if (it.key() == "duration") twins["duration_s"] = it.value();
    if (is_cupti_time(it.key())) {
      twins[it.key() + "_ns"] = it.value();
      twins[it.key() + "_s"] = it.value().get<double>() * 1e-9;
    }
  }
  for (auto it = twins.begin(); it != twins.end(); ++it)
    if (!counters.contains(it.key())) counters[it.key()] = it.value();
}

// The twins add_time_twins wrote, where their source key is there too (a
// document written before them has none; a key of that name without its
// source is data, and stays).
void drop_time_twins(json& counters) {
  if (!counters.is_object()) return;
  std::vector<std::string> twins;
  for (auto it = counters.begin(); it != counters.end(); ++it) {
    const std::string& key = it.key();
    if (key == "duration_s" && counters.contains("duration")) twins.push_back(key);
    for (const std::string suffix : {"_ns", "_s"}) {
      if (!key.ends_with(suffix)) continue;
      const std::string base = key.substr(0, key.size() - suffix.size());
      if (is_cupti_time(base) && counters.contains(base)) twins.push_back(key);
    }
  }
  for (const std::string& key : twins) counters.erase(key);
}

// Applies `f` to every counters map of a document's runs: each point's and each
// of its kernels' (metrics).
template <typename F>
void each_counters_map(json& runs, F f) {
  if (!runs.is_array()) return;
  for (json& run : runs) {
    if (!run.is_object() || !run.contains("points") || !run["points"].is_array()) continue;
    for (json& point : run["points"]) {
      if (!point.is_object()) continue;
      if (point.contains("counters")) f(point["counters"]);
      if (!point.contains("kernels") || !point["kernels"].is_array()) continue;
      for (json& kernel : point["kernels"])
        if (kernel.is_object() && kernel.contains("metrics")) f(kernel["metrics"]);
    }
  }
}

}  // namespace

json export_document(const std::vector<RunRecord>& runs) {
  json out{{"format", kExportFormat},
           {"schema_version", kExportSchemaVersion},
           {"exported_by", {{"tool_version", kToolVersion}, {"git_sha", kGitSha}}},
           {"units",
            {{"time", "every key ending _s is seconds, _ns nanoseconds"},
             {"counters",
              "points[].counters and kernels[].metrics: \"duration\" is seconds (twin "
              "\"duration_s\"); CUPTI's \"gpu__time_duration.sum\" is nanoseconds (twins "
              "\"gpu__time_duration.sum_ns\" and, in seconds, \"gpu__time_duration.sum_s\"); "
              "the twins are written on export and dropped on import"}}},
           {"runs", runs}};
  each_counters_map(out["runs"], add_time_twins);
  return out;
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
  std::vector<RunRecord> runs;
  try {
    // The counters' unit-labelled twins are the export's, not data: dropped.
    if (doc.contains("runs")) {
      json copy = json::object();
      copy["runs"] = doc.at("runs");
      each_counters_map(copy["runs"], drop_time_twins);
      read_field(copy, "runs", runs);
    } else {
      read_field(doc, "runs", runs);
    }
  } catch (const Error& e) {  // a FieldError: the key path and what is wrong there
    throw usage_error(source + ": malformed timeroof export: " + e.what() +
                      "; pass a file written by `timeroof export`");
  }
  return runs;
}

}  // namespace timeroof
