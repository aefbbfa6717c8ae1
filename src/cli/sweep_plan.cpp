// The host side of `timeroof sweep`, in every build: --dry-run's listing and
// --shard's share (no GPU work, no CUDA).
#include <numeric>
#include <utility>

#include "core/ceiling_names.hpp"
#include "src/cli/sweep_backend.hpp"

namespace timeroof::cli {

DryRunRoofs roofs_from(const Machine* machine) {
  DryRunRoofs roofs;
  if (!machine) return roofs;
  using D = TransferDirection;
  using H = HostMemory;
  const std::pair<std::string, double*> wanted[] = {
      {ceiling::fma(Precision::fp32), &roofs.cuda_core_flops_per_s},
      {ceiling::tensor(Precision::fp16), &roofs.tensor_flops_per_s},
      {ceiling::tensor(Precision::tf32), &roofs.tf32_flops_per_s},
      {ceiling::kHbmCopy, &roofs.bytes_per_s},
      {ceiling::transfer(D::h2d, H::pinned), &roofs.h2d_pinned_bytes_per_s},
      {ceiling::transfer(D::d2h, H::pinned), &roofs.d2h_pinned_bytes_per_s},
      {ceiling::transfer(D::h2d, H::pageable), &roofs.h2d_pageable_bytes_per_s},
      {ceiling::transfer(D::d2h, H::pageable), &roofs.d2h_pageable_bytes_per_s}};
  for (const Ceiling& c : machine->ceilings)
    for (const auto& [name, value] : wanted)
      if (c.name == name) *value = c.measured;
  return roofs;
}

namespace {

// The dry run's roofs for this request: the measured ones where given, and no
// counter passes with --no-counters.
DryRunRoofs request_roofs(const SweepRequest& request, const Machine* measured) {
  DryRunRoofs roofs = roofs_from(measured);
  roofs.counter_passes += request.extra_counter_passes;
  if (!request.counters) roofs.counter_passes = 0;
  return roofs;
}

}  // namespace

std::string describe_sweep(const SweepRequest& request, const Machine* measured) {
  return describe_points(request.spec, request_roofs(request, measured),
                         request.only_seqs ? &*request.only_seqs : nullptr);
}

nlohmann::json describe_sweep_json(const SweepRequest& request, const Machine* measured) {
  const DryRunRoofs roofs = request_roofs(request, measured);
  const SweepSpec& spec = request.spec;
  const OperatorFamily& family = find_family(spec.family);
  nlohmann::json points = nlohmann::json::array();
  double total_s = 0;
  for (std::size_t i = 0; i < spec.points.size(); ++i) {
    if (request.only_seqs && !request.only_seqs->count(static_cast<int>(i))) continue;
    const PointEstimate e =
        estimate_point(spec.points[i], family, roofs, spec.transfer, spec.pinned_host);
    total_s += e.point_s;
    points.push_back({{"seq", i},
                      {"params", spec.points[i]},
                      {"flops", e.flops},
                      {"min_bytes", e.min_bytes},
                      {"h2d_bytes", e.h2d_bytes},
                      {"d2h_bytes", e.d2h_bytes},
                      {"transfer_s", e.transfer_s},
                      {"call_s", e.call_s},
                      {"point_s", e.point_s}});
  }
  return {{"sweep", spec.name},
          {"family", spec.family},
          {"transfer", to_string(spec.transfer)},
          {"host_memory", to_string(spec.pinned_host ? HostMemory::pinned : HostMemory::pageable)},
          {"l2", spec.cold_l2 ? "cold" : "warm"},
          {"point_count", spec.points.size()},
          {"points_listed", points.size()},
          {"points", points},
          {"estimated_s", total_s},
          {"roofs", measured ? "measured" : "default"}};
}

// The dry run's expected seconds of each of `seqs`: what points are split by.
std::vector<double> expected_seconds(const SweepSpec& spec, const std::vector<int>& seqs,
                                     const DryRunRoofs& roofs) {
  const OperatorFamily& family = find_family(spec.family);
  std::vector<double> costs;
  costs.reserve(seqs.size());
  for (int seq : seqs)
    costs.push_back(estimate_point(spec.points[static_cast<std::size_t>(seq)], family, roofs,
                                   spec.transfer, spec.pinned_host)
                        .point_s);
  return costs;
}

// Every seq of the sweep but `measured`: what a runner is told to skip.
std::set<int> all_seqs_but(const SweepSpec& spec, const std::vector<int>& measured) {
  std::set<int> skipped;
  for (int seq = 0; seq < static_cast<int>(spec.points.size()); ++seq) skipped.insert(seq);
  for (int seq : measured) skipped.erase(seq);
  return skipped;
}

std::set<int> shard_point_seqs(const SweepSpec& spec, Shard shard) {
  std::vector<int> all(spec.points.size());
  std::iota(all.begin(), all.end(), 0);
  return shard_seqs(expected_seconds(spec, all, DryRunRoofs{}),  // default roofs: never a store's
                    shard);
}

}  // namespace timeroof::cli
