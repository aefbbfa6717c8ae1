// JSON form of the data model: the export/import format and the payload of
// the store's JSON columns. Self-describing and versioned; numbers are numbers;
// a value not measured is null. Export followed by import is exact (doubles are
// written with round-trip precision).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"

namespace timeroof {

// Version of the export format. 2: a point's timing holds three measured times
// with their statistics (call, stream, graph) and the host issue time, where 1
// had one wall time (wall_median_s, wall_spread, repeats); version 1 documents
// are read with that time as T_call.
inline constexpr int kExportSchemaVersion = 2;
// Version of the store's tables (PRAGMA user_version). Its JSON columns hold the
// current export form of their struct; the readers accept every earlier form, so
// a store of schema 1 with points of export version 1 reads as it always did.
// 2: ceilings gain power_json and sustained_json. A store of schema 1 is read as
// it is and upgraded (columns added, nothing rewritten) by the first write of a
// ceiling, inside that write's transaction. 3: runs gain writer_json, the process
// that writes the run (src/store/run_writer.hpp), added by the first write of a
// run or a ceiling in the same way; NULL in older rows and imported runs.
// 4: the trace_events table of `timeroof profile` (src/store/trace_table.hpp),
// created by the first write of trace events (or of a run or a ceiling) inside
// that write's transaction; a store before 4 reads as having no traces.
inline constexpr int kStoreSchemaVersion = 4;
inline constexpr int kOldestStoreSchemaVersion = 1;
inline constexpr const char* kExportFormat = "timeroof-results";

void to_json(nlohmann::json& j, const SoftwareVersions& v);
void from_json(const nlohmann::json& j, SoftwareVersions& v);
void to_json(nlohmann::json& j, const CounterAccess& v);
void from_json(const nlohmann::json& j, CounterAccess& v);
void to_json(nlohmann::json& j, const GpuInfo& v);
void from_json(const nlohmann::json& j, GpuInfo& v);
void to_json(nlohmann::json& j, const PowerConditions& v);
void from_json(const nlohmann::json& j, PowerConditions& v);
void to_json(nlohmann::json& j, const SustainedRoof& v);
void from_json(const nlohmann::json& j, SustainedRoof& v);
void to_json(nlohmann::json& j, const Ceiling& v);
void from_json(const nlohmann::json& j, Ceiling& v);
void to_json(nlohmann::json& j, const WorkingSetSample& v);
void from_json(const nlohmann::json& j, WorkingSetSample& v);
void to_json(nlohmann::json& j, const CeilingSkip& v);
void from_json(const nlohmann::json& j, CeilingSkip& v);
void to_json(nlohmann::json& j, const Machine& v);
void from_json(const nlohmann::json& j, Machine& v);
void to_json(nlohmann::json& j, const TimeStats& v);
void from_json(const nlohmann::json& j, TimeStats& v);
void to_json(nlohmann::json& j, const Timing& v);
void from_json(const nlohmann::json& j, Timing& v);
void to_json(nlohmann::json& j, const KernelRecord& v);
void from_json(const nlohmann::json& j, KernelRecord& v);
void to_json(nlohmann::json& j, const Point& v);
void from_json(const nlohmann::json& j, Point& v);
void to_json(nlohmann::json& j, const Run& v);
void from_json(const nlohmann::json& j, Run& v);
void to_json(nlohmann::json& j, const RunRecord& v);
void from_json(const nlohmann::json& j, RunRecord& v);

// Parses JSON that came from outside (an export file, a store's JSON column)
// with its nesting bounded: the code that reads a value back walks it
// recursively, and a value nested 30,000 deep (a 60 KB file) overflowed the stack.
// Throws a usage error naming `source` and the limit, or the parse error, each
// followed by `fix` ("; pass ...").
inline constexpr int kMaxJsonDepth = 256;
nlohmann::json parse_untrusted_json(std::istream& input, const std::string& source,
                                    const std::string& fix);
nlohmann::json parse_untrusted_json(const std::string& text, const std::string& source,
                                    const std::string& fix);

// A value of an untrusted document (a store's JSON column) as T: GpuInfo, Timing,
// PowerConditions, SustainedRoof or an object of numbers (counters, metrics). A usage error names
// the key path inside the value and what is wrong there ("call.median_s is a string, not a
// number"), never the JSON library's words.
template <typename T>
T read_untrusted(const nlohmann::json& value);
extern template GpuInfo read_untrusted<GpuInfo>(const nlohmann::json&);
extern template Timing read_untrusted<Timing>(const nlohmann::json&);
extern template std::map<std::string, double> read_untrusted<std::map<std::string, double>>(
    const nlohmann::json&);
extern template PowerConditions read_untrusted<PowerConditions>(const nlohmann::json&);
extern template SustainedRoof read_untrusted<SustainedRoof>(const nlohmann::json&);

// What a JSON library error says, without its id ("[json.exception.parse_error.101] ").
std::string json_error_text(const nlohmann::json::exception& error);

// The export document: {"format", "schema_version", "exported_by", "runs": [...]}.
nlohmann::json export_document(const std::vector<RunRecord>& runs);
// Parses an export document; throws a usage error naming the problem
// (`source` names the file in the message).
std::vector<RunRecord> parse_export_document(const nlohmann::json& doc, const std::string& source);

}  // namespace timeroof
