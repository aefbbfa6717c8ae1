#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>

#include "core/format.hpp"
#include "gpu/device.hpp"
#include "src/cli/sweep_backend.hpp"
#include "src/store/results_store.hpp"
#include "sweeps/runner.hpp"
#include "sweeps/spec.hpp"
#include "sweeps/timing_worker.hpp"

namespace timeroof::cli {

namespace {

std::atomic<bool> g_stop_requested{false};  // set by SIGINT; read between points

extern "C" void request_stop(int) {
  g_stop_requested.store(true);
}

// Installs the Ctrl-C handler for the life of a sweep and restores the old one.
class StopOnInterrupt {
 public:
  StopOnInterrupt() {
    g_stop_requested = false;
    previous_ = std::signal(SIGINT, request_stop);
  }
  ~StopOnInterrupt() { std::signal(SIGINT, previous_); }
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;

 private:
  void (*previous_)(int) = SIG_DFL;
};

// This program's own path, to start its timing worker; "" where it cannot be read
// (the runner then times in this process and says so).
std::string own_executable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string();
}

SweepSpec spec_of(const SweepRequest& request) {
  const bool file = request.target.size() > 5 &&
                    request.target.compare(request.target.size() - 5, 5, ".toml") == 0;
  if (file) {
    if (!request.flags.empty()) {
      throw usage_error("a sweep file takes no axis flags (got --" + request.flags[0].first +
                        "); put them in " + request.target);
    }
    return spec_from_toml(request.target);
  }
  if (request.flags.empty()) return default_spec(request.target);
  return spec_from_flags(request.target, request.flags);
}

// The dry run's time model uses this machine's measured roofs when there are some.
DryRunRoofs roofs_from(const Machine* machine) {
  DryRunRoofs roofs;
  if (!machine) return roofs;
  for (const Ceiling& c : machine->ceilings) {
    if (c.name == "fp32_fma") roofs.cuda_core_flops_per_s = c.measured;
    if (c.name == "tensor_fp16") roofs.tensor_flops_per_s = c.measured;
    if (c.name == "tensor_tf32") roofs.tf32_flops_per_s = c.measured;
    if (c.name == "hbm_copy") roofs.bytes_per_s = c.measured;
    if (c.name == "h2d_pinned") roofs.h2d_pinned_bytes_per_s = c.measured;
    if (c.name == "d2h_pinned") roofs.d2h_pinned_bytes_per_s = c.measured;
    if (c.name == "h2d_pageable") roofs.h2d_pageable_bytes_per_s = c.measured;
    if (c.name == "d2h_pageable") roofs.d2h_pageable_bytes_per_s = c.measured;
  }
  return roofs;
}

class StoreSink final : public PointSink {
 public:
  StoreSink(ResultsStore& store, std::int64_t run_id) : store_(store), run_id_(run_id) {}
  void write(Point& point) override { store_.add_point(run_id_, point); }

 private:
  ResultsStore& store_;
  std::int64_t run_id_;
};

std::string duration_text(double seconds) {
  char text[32];
  if (seconds < 60)
    std::snprintf(text, sizeof text, "%.0fs", seconds);
  else
    std::snprintf(text, sizeof text, "%dm%02ds", static_cast<int>(seconds / 60),
                  static_cast<int>(seconds) % 60);
  return text;
}

}  // namespace

std::string describe_sweep(const SweepRequest& request, const Machine* measured) {
  const SweepSpec spec = spec_of(request);
  DryRunRoofs roofs = roofs_from(measured);
  if (!request.counters) roofs.counter_passes = 0;  // --no-counters
  return describe_points(spec, roofs, request.only_seqs ? &*request.only_seqs : nullptr);
}

std::set<int> shard_point_seqs(const SweepRequest& request, Shard shard) {
  const SweepSpec spec = spec_of(request);
  const OperatorFamily& family = find_family(spec.family);
  std::vector<double> costs;
  costs.reserve(spec.points.size());
  for (const nlohmann::json& point : spec.points)  // default roofs: never this store's
    costs.push_back(
        estimate_point(point, family, DryRunRoofs{}, spec.transfer, spec.pinned_host).point_s);
  return shard_seqs(costs, shard);
}

ExitCode measure_sweep(const SweepRequest& request, ResultsStore& store, Run& run,
                       bool show_progress) {
  const SweepSpec spec = spec_of(request);  // validated: no GPU work before this
  bool recorded = false;                    // a resumed run has its spec already
  std::string stored;                       // the run's sweeps, for the messages
  const nlohmann::json wanted = to_json(spec);
  for (const auto& sweep : run.spec["sweeps"]) {
    const std::string name = sweep.value("name", std::string());
    stored += (stored.empty() ? "" : ", ") + name + " (" +
              std::to_string(sweep.value("points", nlohmann::json::array()).size()) + " points)";
    if (name != spec.name) continue;
    recorded = true;
    // Resuming with other points would append them to a run whose command line
    // names the first spec (issue 16: a 44-point conv2d run got the 108-point
    // default sweep, then 152 LSTM points).
    if (sweep.value("points", nlohmann::json()) != wanted.at("points"))
      throw usage_error("--resume " + std::to_string(run.id) + ": run " + std::to_string(run.id) +
                        " measured sweep " + name + " with other points (" + stored +
                        "); resume it with the command that started it: " + run.command_line);
  }
  if (request.resume && !recorded)
    throw usage_error("--resume " + std::to_string(run.id) + ": run " + std::to_string(run.id) +
                      " holds no sweep " + spec.name +
                      " (it has: " + (stored.empty() ? "none" : stored) +
                      "); resume it with the command that started it: " + run.command_line);
  if (!recorded) {
    run.spec["sweeps"].push_back(to_json(spec));
    store.update_run(run);
  }

  RunnerOptions options;
  options.timing_worker = own_executable();  // timing in a process CUPTI never attached to
  options.counters = request.counters;
  options.cold_l2 = spec.cold_l2;
  options.transfer = spec.transfer;
  options.pinned_host = spec.pinned_host;
  SweepRunner runner(run.machine.gpu, options);
  const OperatorFamily& family = find_family(spec.family);
  const SweepPlan plan{spec.name, &family, spec.points};
  StoreSink sink(store, run.id);
  const StopOnInterrupt stop_on_interrupt;
  const std::set<int> finished = store.finished_point_seqs(run.id, spec.name);
  std::set<int> skipped = finished;
  if (request.only_seqs)  // another process's share counts as done here
    for (int seq = 0; seq < static_cast<int>(spec.points.size()); ++seq)
      if (!request.only_seqs->count(seq)) skipped.insert(seq);
  const SweepOutcome outcome =
      runner.run(plan, skipped, sink, g_stop_requested, [&](const SweepProgress& p) {
        if (!show_progress) return;
        const double eta = p.done ? p.elapsed_s / p.done * (p.total - p.done) : 0;
        std::fprintf(stderr, "\r\033[Ktimeroof: %s [%d/%d] %s%s", spec.name.c_str(), p.done,
                     p.total, p.done ? ("ETA " + duration_text(eta) + " ").c_str() : "",
                     p.current.substr(0, 100).c_str());
        if (p.current.empty()) std::fputs("\r\033[K", stderr);
      });
  std::fprintf(stderr, "timeroof: %s: %d point(s) measured, %d not ok, %d already stored (%s)%s\n",
               spec.name.c_str(), outcome.measured, outcome.not_ok,
               outcome.already_finished - static_cast<int>(skipped.size() - finished.size()),
               duration_text(outcome.seconds).c_str(),
               outcome.interrupted ? "; interrupted: resume with --resume" : "");
  return outcome.interrupted ? ExitCode::partial : ExitCode::ok;
}

ExitCode serve_timing_worker(int device) {
  select_gpu(device);
  serve_timing_requests(std::cin, std::cout, query_gpu(device));
  return ExitCode::ok;
}

}  // namespace timeroof::cli
