#include "core/results.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>

#include "core/error.hpp"
#include "core/format.hpp"
#include "timeroof/version.hpp"

namespace timeroof {

namespace {
constexpr std::array<std::pair<CeilingKind, const char*>, 3> kCeilingKinds{{
    {CeilingKind::compute, "compute"},
    {CeilingKind::bandwidth, "bandwidth"},
    {CeilingKind::latency, "latency"},
}};
constexpr std::array<std::pair<PointStatus, const char*>, 5> kPointStatuses{{
    {PointStatus::ok, "ok"},
    {PointStatus::unsupported, "unsupported"},
    {PointStatus::out_of_memory, "out_of_memory"},
    {PointStatus::counters_unavailable, "counters_unavailable"},
    {PointStatus::failed, "failed"},
}};

template <typename Enum, std::size_t N>
const char* name_of(const std::array<std::pair<Enum, const char*>, N>& table, Enum value) {
  for (const auto& [e, name] : table)
    if (e == value) return name;
  return "unknown";
}

template <typename Enum, std::size_t N>
Enum value_of(const std::array<std::pair<Enum, const char*>, N>& table, const std::string& text,
              const char* what) {
  std::string allowed;
  for (const auto& [e, name] : table) {
    if (text == name) return e;
    allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  }
  throw usage_error("unknown " + std::string(what) + " '" + text + "' (expected one of " + allowed +
                    ")");
}

std::string random_uuid() {
  std::random_device device;
  std::array<std::uint32_t, 4> words{};
  for (auto& w : words) w = device();
  words[1] = (words[1] & 0xffff0fffu) | 0x00004000u;  // version 4
  words[2] = (words[2] & 0x3fffffffu) | 0x80000000u;  // RFC 4122 variant
  char text[64];
  std::snprintf(text, sizeof text, "%08x-%04x-%04x-%04x-%04x%08x", words[0], words[1] >> 16,
                words[1] & 0xffffu, words[2] >> 16, words[2] & 0xffffu, words[3]);
  return text;
}

// The kernel keeps any bytes as a host name; the run stores UTF-8 text.
std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return replace_invalid_utf8(name);
}
}  // namespace

const char* to_string(CeilingKind kind) {
  return name_of(kCeilingKinds, kind);
}
const char* to_string(PointStatus status) {
  return name_of(kPointStatuses, status);
}
CeilingKind ceiling_kind_from_string(const std::string& text) {
  return value_of(kCeilingKinds, text, "ceiling kind");
}
PointStatus point_status_from_string(const std::string& text) {
  return value_of(kPointStatuses, text, "point status");
}

std::int64_t run_number(const Run& run, std::size_t position) {
  return run.id > 0 ? run.id : static_cast<std::int64_t>(position);
}

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis));
  return text;
}

Run new_run(const std::string& command_line) {
  Run run;
  run.uuid = random_uuid();
  run.tool_version = kToolVersion;
  run.git_sha = kGitSha;
  run.command_line = command_line;
  run.host = host_name();
  run.started_at = utc_now_iso8601();
  return run;
}

}  // namespace timeroof
