#include "roofline/machine_roofs.hpp"

#include <cmath>

#include "core/ceiling_names.hpp"

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

std::vector<std::string> compute_variants(PrecisionClass precision) {
  using P = PrecisionClass;
  const auto tensor_variants = [](Precision p) {
    return std::vector<std::string>{ceiling::tensor(p), ceiling::tensor_mma_sync(p),
                                    ceiling::library(p)};
  };
  switch (precision) {
    case P::fp64:
      return {ceiling::fma(Precision::fp64)};
    case P::fp32:
      return {ceiling::fma(Precision::fp32)};
    case P::half:
      return {ceiling::fma(Precision::fp16), ceiling::fma(Precision::bf16)};
    case P::tensor_fp16:
      return tensor_variants(Precision::fp16);
    case P::tensor_bf16:
      return tensor_variants(Precision::bf16);
    case P::tensor_tf32:
      return tensor_variants(Precision::tf32);
    case P::tensor_fp8:
      return tensor_variants(Precision::fp8);
    case P::tensor_int8:
      return tensor_variants(Precision::int8);
    case P::tensor_fp64:  // one Tensor-Core path: no mma_sync figure
      return {ceiling::tensor(Precision::fp64), ceiling::library(Precision::fp64)};
  }
  return {};
}

std::vector<std::string> memory_variants(Level level) {
  switch (level) {
    case Level::l1:
      return {ceiling::kL1Read};
    case Level::l2:
      return {ceiling::kL2Read};
    case Level::dram:
      return {ceiling::kHbmRead, ceiling::kHbmCopy};
  }
  return {};
}

MachineRoofs machine_roofs(const Machine& machine) {
  MachineRoofs roofs;
  for (PrecisionClass p : kAllPrecisionClasses)
    roofs.compute[static_cast<std::size_t>(p)] = pick(machine, compute_variants(p));
  for (Level l : kAllLevels) {
    // hbm_write has the same theoretical DRAM roof; it serves only as a fallback.
    const std::vector<std::string> extra = l == Level::dram
                                               ? std::vector<std::string>{ceiling::kHbmWrite}
                                               : std::vector<std::string>{};
    roofs.memory[static_cast<std::size_t>(l)] = pick(machine, memory_variants(l), extra);
  }
  roofs.launch = pick(machine, {ceiling::kLaunchAsync}, {}, /*larger_is_better=*/false);
  // Each pair on its own: a missing pageable roof is absent, never the pinned one.
  for (TransferDirection d : kAllTransferDirections)
    for (HostMemory h : kAllHostMemories)
      roofs.transfers[static_cast<std::size_t>(d)][static_cast<std::size_t>(h)] =
          pick(machine, {ceiling::transfer(d, h)});
  std::vector<std::string> links;
  for (const Ceiling& c : machine.ceilings)
    if (ceiling::is_interconnect(c.name) && c.kind == CeilingKind::bandwidth)
      links.push_back(c.name);
  if (!links.empty()) roofs.interconnect = pick(machine, links);
  return roofs;
}

}  // namespace timeroof::roofline
