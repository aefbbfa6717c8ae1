// The words every layer shares, typed, with one spelling each (docs/design.md,
// "Vocabulary"): the numbers an operator stores and computes in, the precision
// class a roof belongs to, memory levels, host memory and copy directions.
// Every layer uses these; none keeps a twin enum or matches the spellings by
// hand. The spellings are part of the stored format (Point::precision,
// Point::math_mode, details["transfer"]["host"], analysis JSON keys): never
// change one. Plain C++: kernels (.cu) include it too.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace timeroof {

// ---- Numbers ------------------------------------------------------------------

// How one element is stored: "fp64", "fp32", "fp16", "bf16", "fp8_e4m3",
// "fp8_e5m2", "int8", "int32".
enum class DataType { fp64, fp32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8, int32 };
inline constexpr std::array<DataType, 8> kAllDataTypes = {
    DataType::fp64,     DataType::fp32,     DataType::fp16, DataType::bf16,
    DataType::fp8_e4m3, DataType::fp8_e5m2, DataType::int8, DataType::int32};

const char* to_string(DataType type);
std::size_t element_bytes(DataType type);  // 8, 4, 2, 2, 1, 1, 1, 4

// The arithmetic of an operator or the operand type of a matrix product:
// "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8" (Point::precision, the
// suffix of the compute ceiling names). tf32 = fp32 tensors multiplied on Tensor
// Cores with 10-bit mantissas; fp16, bf16, tf32 and fp8 (e4m3) accumulate in fp32,
// int8 in int32, fp64 in fp64.
enum class Precision { fp64, fp32, tf32, fp16, bf16, fp8, int8 };
inline constexpr std::array<Precision, 7> kAllPrecisions = {
    Precision::fp64, Precision::fp32, Precision::tf32, Precision::fp16,
    Precision::bf16, Precision::fp8,  Precision::int8};

const char* to_string(Precision precision);
// nullopt for a text that is none of the spellings.
std::optional<Precision> find_precision(std::string_view text);
// A usage error "precision: unknown value 'x'; allowed: ..." naming `allowed`
// (what the caller takes), also for a known precision outside `allowed`.
Precision parse_precision(std::string_view text,
                          std::span<const Precision> allowed = kAllPrecisions);
// How its operands are stored: tf32 in fp32, fp8 as e4m3.
DataType storage_type(Precision precision);
// Bytes of one stored element: element_bytes(storage_type(precision)).
std::size_t element_bytes(Precision precision);

// Whether a library may use Tensor Cores, or must stay on FMA units:
// "tensor", "fma_only" (Point::math_mode).
enum class MathMode { tensor, fma_only };

const char* to_string(MathMode mode);
std::optional<MathMode> find_math_mode(std::string_view text);
// A usage error "math: unknown value 'x'; allowed: ..." for anything else.
MathMode parse_math_mode(std::string_view text);

// ---- Roofs ----------------------------------------------------------------------

// The precision classes of the model (docs/design.md, W_p): one compute roof
// each. `half` is CUDA-core fp16 + bf16: the SASS counters cannot tell them apart.
enum class PrecisionClass {
  fp64,
  fp32,
  half,
  tensor_fp16,
  tensor_bf16,
  tensor_tf32,
  tensor_fp8,
  tensor_int8,
  tensor_fp64,
};
inline constexpr std::size_t kPrecisionClassCount = 9;
inline constexpr std::array<PrecisionClass, kPrecisionClassCount> kAllPrecisionClasses = {
    PrecisionClass::fp64,        PrecisionClass::fp32,        PrecisionClass::half,
    PrecisionClass::tensor_fp16, PrecisionClass::tensor_bf16, PrecisionClass::tensor_tf32,
    PrecisionClass::tensor_fp8,  PrecisionClass::tensor_int8, PrecisionClass::tensor_fp64};

const char* to_string(PrecisionClass precision);  // "fp32", "half", "tensor_fp16", ...
// True for the Tensor-Core classes (tensor_*).
bool is_tensor(PrecisionClass precision);
// The class whose roof an operator's work runs against: with Tensor Cores
// tensor_<precision> (fp32 runs as tf32); on FMA units fp64, fp32 or half
// (fp16, bf16); nullopt where there is none (tf32, fp8 or int8 without Tensor Cores).
std::optional<PrecisionClass> precision_class(Precision precision, MathMode math);

// Memory levels of the hierarchical roofline, innermost first: "l1", "l2", "dram".
enum class Level { l1, l2, dram };
inline constexpr std::size_t kLevelCount = 3;
inline constexpr std::array<Level, kLevelCount> kAllLevels = {Level::l1, Level::l2, Level::dram};

const char* to_string(Level level);
// "L1", "L2", "HBM": a level as people name it, in charts and findings.
const char* display_name(Level level);

// Host memory of a host<->device copy: page-locked (pinned) or pageable.
enum class HostMemory { pinned, pageable };
inline constexpr std::size_t kHostMemoryCount = 2;
inline constexpr std::array<HostMemory, kHostMemoryCount> kAllHostMemories = {HostMemory::pinned,
                                                                              HostMemory::pageable};

const char* to_string(HostMemory host);  // "pinned", "pageable"
// "pinned" -> pinned, "pageable" -> pageable; anything else nullopt.
std::optional<HostMemory> find_host_memory(std::string_view text);

// Direction of a host<->device copy.
enum class TransferDirection { h2d, d2h };
inline constexpr std::size_t kTransferDirectionCount = 2;
inline constexpr std::array<TransferDirection, kTransferDirectionCount> kAllTransferDirections = {
    TransferDirection::h2d, TransferDirection::d2h};

const char* to_string(TransferDirection direction);  // "h2d", "d2h"
// "H2D", "D2H": as reports write them.
const char* direction_name(TransferDirection direction);

// ---- Runs ---------------------------------------------------------------------

// Where a run stands (Run::status): "running" (the row exists while it measures,
// so a crash leaves a visible running run), "complete", "partial" (interrupted,
// or some points failed), "failed". "interrupted" is never written by the run's
// own process: the store derives it as it reads a "running" run whose writer is
// provably gone (killed, out of memory, power lost), and an export carries it.
enum class RunStatus { running, complete, partial, failed, interrupted };

const char* to_string(RunStatus status);
std::optional<RunStatus> find_run_status(std::string_view text);

// ---- A point's stored strings, typed ---------------------------------------------

struct Point;  // core/results.hpp

// Point::precision and Point::math_mode as the model reads them; nullopt for a
// value that is none of the spellings (the stored strings stay as written).
std::optional<Precision> precision_of(const Point& point);
std::optional<MathMode> math_mode_of(const Point& point);
// The host memory of a point's transfers (details["transfer"]["host"]): pinned
// where it is absent, null or not a known value; `unknown`, when given, receives a
// value that is present but neither "pinned" nor "pageable" (else it is cleared).
HostMemory transfer_host(const Point& point, std::string* unknown = nullptr);

}  // namespace timeroof
