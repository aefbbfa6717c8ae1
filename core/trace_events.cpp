#include "core/trace_events.hpp"

#include <array>
#include <utility>

namespace timeroof {

namespace {
constexpr std::array<std::pair<TraceKind, const char*>, 9> kTraceKindNames = {{
    {TraceKind::kernel, "kernel"},
    {TraceKind::memcpy, "memcpy"},
    {TraceKind::memset, "memset"},
    {TraceKind::runtime_api, "runtime_api"},
    {TraceKind::driver_api, "driver_api"},
    {TraceKind::sync, "sync"},
    {TraceKind::nvtx_range, "nvtx_range"},
    {TraceKind::nvtx_mark, "nvtx_mark"},
    {TraceKind::kernel_counters, "kernel_counters"},
}};
}  // namespace

const char* to_string(TraceKind kind) {
  for (const auto& [value, name] : kTraceKindNames)
    if (value == kind) return name;
  return "unknown";
}

std::optional<TraceKind> find_trace_kind(std::string_view text) {
  for (const auto& [value, name] : kTraceKindNames)
    if (text == name) return value;
  return std::nullopt;
}

bool on_gpu(TraceKind kind) {
  return kind == TraceKind::kernel || kind == TraceKind::memcpy || kind == TraceKind::memset;
}

}  // namespace timeroof
