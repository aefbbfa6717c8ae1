#include "core/vocabulary.hpp"

#include "core/error.hpp"
#include "core/results.hpp"

namespace timeroof {

const char* to_string(DataType type) {
  switch (type) {
    case DataType::fp64:
      return "fp64";
    case DataType::fp32:
      return "fp32";
    case DataType::fp16:
      return "fp16";
    case DataType::bf16:
      return "bf16";
    case DataType::fp8_e4m3:
      return "fp8_e4m3";
    case DataType::fp8_e5m2:
      return "fp8_e5m2";
    case DataType::int8:
      return "int8";
    case DataType::int32:
      return "int32";
  }
  return "?";
}

std::size_t element_bytes(DataType type) {
  switch (type) {
    case DataType::fp64:
      return 8;
    case DataType::fp32:
    case DataType::int32:
      return 4;
    case DataType::fp16:
    case DataType::bf16:
      return 2;
    case DataType::fp8_e4m3:
    case DataType::fp8_e5m2:
    case DataType::int8:
      return 1;
  }
  return 0;
}

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::fp64:
      return "fp64";
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
    case Precision::fp8:
      return "fp8";
    case Precision::int8:
      return "int8";
  }
  return "?";
}

std::optional<Precision> find_precision(std::string_view text) {
  for (Precision p : kAllPrecisions)
    if (text == to_string(p)) return p;
  return std::nullopt;
}

Precision parse_precision(std::string_view text, std::span<const Precision> allowed) {
  std::string names;
  for (Precision p : allowed) {
    if (text == to_string(p)) return p;
    names += (names.empty() ? "" : ", ") + std::string(to_string(p));
  }
  throw usage_error("precision: unknown value '" + std::string(text) + "'; allowed: " + names);
}

DataType storage_type(Precision precision) {
  switch (precision) {
    case Precision::fp64:
      return DataType::fp64;
    case Precision::fp32:
    case Precision::tf32:
      return DataType::fp32;
    case Precision::fp16:
      return DataType::fp16;
    case Precision::bf16:
      return DataType::bf16;
    case Precision::fp8:
      return DataType::fp8_e4m3;
    case Precision::int8:
      return DataType::int8;
  }
  return DataType::fp32;
}

std::size_t element_bytes(Precision precision) {
  return element_bytes(storage_type(precision));
}

const char* to_string(MathMode mode) {
  switch (mode) {
    case MathMode::tensor:
      return "tensor";
    case MathMode::fma_only:
      return "fma_only";
  }
  return "?";
}

std::optional<MathMode> find_math_mode(std::string_view text) {
  for (MathMode m : {MathMode::tensor, MathMode::fma_only})
    if (text == to_string(m)) return m;
  return std::nullopt;
}

MathMode parse_math_mode(std::string_view text) {
  if (const auto mode = find_math_mode(text)) return *mode;
  throw usage_error("math: unknown value '" + std::string(text) +
                    "'; allowed: tensor (Tensor Cores allowed), fma_only (FMA units only)");
}

const char* to_string(PrecisionClass precision) {
  switch (precision) {
    case PrecisionClass::fp64:
      return "fp64";
    case PrecisionClass::fp32:
      return "fp32";
    case PrecisionClass::half:
      return "half";
    case PrecisionClass::tensor_fp16:
      return "tensor_fp16";
    case PrecisionClass::tensor_bf16:
      return "tensor_bf16";
    case PrecisionClass::tensor_tf32:
      return "tensor_tf32";
    case PrecisionClass::tensor_fp8:
      return "tensor_fp8";
    case PrecisionClass::tensor_int8:
      return "tensor_int8";
    case PrecisionClass::tensor_fp64:
      return "tensor_fp64";
  }
  return "?";
}

bool is_tensor(PrecisionClass precision) {
  return precision != PrecisionClass::fp64 && precision != PrecisionClass::fp32 &&
         precision != PrecisionClass::half;
}

std::optional<PrecisionClass> precision_class(Precision precision, MathMode math) {
  if (math == MathMode::tensor) {
    switch (precision) {
      case Precision::fp16:
        return PrecisionClass::tensor_fp16;
      case Precision::bf16:
        return PrecisionClass::tensor_bf16;
      case Precision::fp32:
      case Precision::tf32:
        return PrecisionClass::tensor_tf32;
      case Precision::fp8:
        return PrecisionClass::tensor_fp8;
      case Precision::int8:
        return PrecisionClass::tensor_int8;
      case Precision::fp64:
        return PrecisionClass::tensor_fp64;
    }
    return std::nullopt;
  }
  switch (precision) {
    case Precision::fp16:
    case Precision::bf16:
      return PrecisionClass::half;
    case Precision::fp32:
      return PrecisionClass::fp32;
    case Precision::fp64:
      return PrecisionClass::fp64;
    case Precision::tf32:
    case Precision::fp8:
    case Precision::int8:
      return std::nullopt;
  }
  return std::nullopt;
}

const char* to_string(Level level) {
  switch (level) {
    case Level::l1:
      return "l1";
    case Level::l2:
      return "l2";
    case Level::dram:
      return "dram";
  }
  return "?";
}

const char* display_name(Level level) {
  switch (level) {
    case Level::l1:
      return "L1";
    case Level::l2:
      return "L2";
    case Level::dram:
      return "HBM";
  }
  return "?";
}

const char* to_string(HostMemory host) {
  switch (host) {
    case HostMemory::pinned:
      return "pinned";
    case HostMemory::pageable:
      return "pageable";
  }
  return "?";
}

std::optional<HostMemory> find_host_memory(std::string_view text) {
  for (HostMemory h : kAllHostMemories)
    if (text == to_string(h)) return h;
  return std::nullopt;
}

const char* to_string(TransferDirection direction) {
  switch (direction) {
    case TransferDirection::h2d:
      return "h2d";
    case TransferDirection::d2h:
      return "d2h";
  }
  return "?";
}

const char* direction_name(TransferDirection direction) {
  switch (direction) {
    case TransferDirection::h2d:
      return "H2D";
    case TransferDirection::d2h:
      return "D2H";
  }
  return "?";
}

const char* to_string(RunStatus status) {
  switch (status) {
    case RunStatus::running:
      return "running";
    case RunStatus::complete:
      return "complete";
    case RunStatus::partial:
      return "partial";
    case RunStatus::failed:
      return "failed";
    case RunStatus::interrupted:
      return "interrupted";
  }
  return "?";
}

std::optional<RunStatus> find_run_status(std::string_view text) {
  for (RunStatus s : {RunStatus::running, RunStatus::complete, RunStatus::partial,
                      RunStatus::failed, RunStatus::interrupted})
    if (text == to_string(s)) return s;
  return std::nullopt;
}

std::optional<Precision> precision_of(const Point& point) {
  return find_precision(point.precision);
}

std::optional<MathMode> math_mode_of(const Point& point) {
  return find_math_mode(point.math_mode);
}

HostMemory transfer_host(const Point& point, std::string* unknown) {
  if (unknown) unknown->clear();
  const nlohmann::json& d = point.details;
  if (!d.is_object() || !d.contains("transfer") || !d.at("transfer").is_object())
    return HostMemory::pinned;
  const nlohmann::json& t = d.at("transfer");
  if (!t.contains("host") || t.at("host").is_null()) return HostMemory::pinned;
  const nlohmann::json& h = t.at("host");
  const std::string text = h.is_string() ? h.get<std::string>() : h.dump();
  if (const auto host = find_host_memory(text)) return *host;
  if (unknown) *unknown = text;
  return HostMemory::pinned;
}

}  // namespace timeroof
