#include "roofline/machine_roofs.hpp"

#include <cmath>

namespace timeroof::roofline {

namespace {

const Ceiling* find_ceiling(const Machine& machine, const std::string& name) {
  for (const Ceiling& c : machine.ceilings)
    if (c.name == name) return &c;
  return nullptr;
}

const CeilingSkip* find_skip(const Machine& machine, const std::string& name) {
  for (const CeilingSkip& s : machine.skipped)
    if (s.name == name) return &s;
  return nullptr;
}

bool usable(double value) {
  return std::isfinite(value) && value > 0;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Best measured among `variants`, else best theoretical among `variants` and
// `theoretical_only`, else absent. `larger_is_better` is false for latencies.
Roof pick(const Machine& machine, const std::vector<std::string>& variants,
          const std::vector<std::string>& theoretical_only = {}, bool larger_is_better = true) {
  const auto better = [&](double a, double b) { return larger_is_better ? a > b : a < b; };
  Roof roof;
  for (const std::string& name : variants) {
    const Ceiling* c = find_ceiling(machine, name);
    if (c == nullptr || !usable(c->measured)) continue;
    if (!roof.value || better(c->measured, *roof.value)) {
      roof.value = c->measured;
      roof.ceiling = name;
    }
  }
  if (roof.value) {
    roof.source = RoofSource::measured;
    roof.note = variants.size() > 1 ? "best measured of " + join(variants) : "measured";
    return roof;
  }
  std::vector<std::string> all = variants;
  all.insert(all.end(), theoretical_only.begin(), theoretical_only.end());
  for (const std::string& name : all) {
    const Ceiling* c = find_ceiling(machine, name);
    if (c == nullptr || !c->theoretical || !usable(*c->theoretical)) continue;
    if (!roof.value || better(*c->theoretical, *roof.value)) {
      roof.value = *c->theoretical;
      roof.ceiling = name;
    }
  }
  std::string why;
  for (const std::string& name : variants) {
    const CeilingSkip* s = find_skip(machine, name);
    const Ceiling* c = find_ceiling(machine, name);
    std::string reason = s != nullptr ? s->reason : c != nullptr ? "no valid measurement" : "";
    if (reason.empty()) reason = "not in the machine";
    why += (why.empty() ? "" : "; ") + name + ": " + reason;
  }
  if (roof.value) {
    roof.source = RoofSource::theoretical;
    const Ceiling* c = find_ceiling(machine, roof.ceiling);
    roof.note = "theoretical (" + c->theoretical_source + "), not measured: " + why;
  } else {
    roof.source = RoofSource::absent;
    roof.note = "absent: " + why;
  }
  return roof;
}

}  // namespace

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::fp64:
      return "fp64";
    case Precision::fp32:
      return "fp32";
    case Precision::half:
      return "half";
    case Precision::tensor_fp16:
      return "tensor_fp16";
    case Precision::tensor_bf16:
      return "tensor_bf16";
    case Precision::tensor_tf32:
      return "tensor_tf32";
    case Precision::tensor_fp8:
      return "tensor_fp8";
    case Precision::tensor_int8:
      return "tensor_int8";
    case Precision::tensor_fp64:
      return "tensor_fp64";
  }
  return "?";
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

const char* to_string(HostMemory host) {
  switch (host) {
    case HostMemory::pinned:
      return "pinned";
    case HostMemory::pageable:
      return "pageable";
  }
  return "?";
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

std::optional<HostMemory> host_memory_from_string(const std::string& text) {
  for (HostMemory h : kAllHostMemories)
    if (text == to_string(h)) return h;
  return std::nullopt;
}

const char* to_string(RoofSource source) {
  switch (source) {
    case RoofSource::measured:
      return "measured";
    case RoofSource::theoretical:
      return "theoretical";
    case RoofSource::absent:
      return "absent";
  }
  return "?";
}

bool is_tensor(Precision precision) {
  return precision != Precision::fp64 && precision != Precision::fp32 &&
         precision != Precision::half;
}

const char* work_quantity(Precision precision) {
  switch (precision) {
    case Precision::fp64:
      return "fp64_flops";
    case Precision::fp32:
      return "fp32_flops";
    case Precision::half:
      return "half_flops";
    case Precision::tensor_fp16:
      return "tensor_fp16_flops";
    case Precision::tensor_bf16:
      return "tensor_bf16_flops";
    case Precision::tensor_tf32:
      return "tensor_tf32_flops";
    case Precision::tensor_fp8:
      return "tensor_fp8_flops";
    case Precision::tensor_int8:
      return "tensor_int8_ops";
    case Precision::tensor_fp64:
      return "tensor_fp64_flops";
  }
  return "";
}

std::vector<std::string> compute_variants(Precision precision) {
  switch (precision) {
    case Precision::fp64:
      return {"fp64_fma"};
    case Precision::fp32:
      return {"fp32_fma"};
    case Precision::half:
      return {"fp16_fma", "bf16_fma"};
    case Precision::tensor_fp16:
      return {"tensor_fp16", "tensor_fp16_mma_sync", "cublaslt_fp16"};
    case Precision::tensor_bf16:
      return {"tensor_bf16", "tensor_bf16_mma_sync", "cublaslt_bf16"};
    case Precision::tensor_tf32:
      return {"tensor_tf32", "tensor_tf32_mma_sync", "cublaslt_tf32"};
    case Precision::tensor_fp8:
      return {"tensor_fp8", "tensor_fp8_mma_sync", "cublaslt_fp8"};
    case Precision::tensor_int8:
      return {"tensor_int8", "tensor_int8_mma_sync", "cublaslt_int8"};
    case Precision::tensor_fp64:
      return {"tensor_fp64", "cublas_fp64"};
  }
  return {};
}

std::vector<std::string> memory_variants(Level level) {
  switch (level) {
    case Level::l1:
      return {"l1_read"};
    case Level::l2:
      return {"l2_read"};
    case Level::dram:
      return {"hbm_read", "hbm_copy"};
  }
  return {};
}

std::string transfer_ceiling(TransferDirection direction, HostMemory host) {
  return std::string(to_string(direction)) + "_" + to_string(host);
}

bool is_interconnect_ceiling(const std::string& name) {
  return name.rfind("p2p_", 0) == 0 || name.rfind("allreduce_", 0) == 0;
}

MachineRoofs machine_roofs(const Machine& machine) {
  MachineRoofs roofs;
  for (Precision p : kAllPrecisions)
    roofs.compute[static_cast<std::size_t>(p)] = pick(machine, compute_variants(p));
  for (Level l : kAllLevels) {
    // hbm_write has the same theoretical DRAM roof; it serves only as a fallback.
    const std::vector<std::string> extra =
        l == Level::dram ? std::vector<std::string>{"hbm_write"} : std::vector<std::string>{};
    roofs.memory[static_cast<std::size_t>(l)] = pick(machine, memory_variants(l), extra);
  }
  roofs.launch = pick(machine, {"launch_async"}, {}, /*larger_is_better=*/false);
  // Each pair on its own: a missing pageable roof is absent, never the pinned one.
  for (TransferDirection d : kAllTransferDirections)
    for (HostMemory h : kAllHostMemories)
      roofs.transfers[static_cast<std::size_t>(d)][static_cast<std::size_t>(h)] =
          pick(machine, {transfer_ceiling(d, h)});
  std::vector<std::string> links;
  for (const Ceiling& c : machine.ceilings)
    if (is_interconnect_ceiling(c.name) && c.kind == CeilingKind::bandwidth)
      links.push_back(c.name);
  if (!links.empty()) roofs.interconnect = pick(machine, links);
  return roofs;
}

}  // namespace timeroof::roofline
