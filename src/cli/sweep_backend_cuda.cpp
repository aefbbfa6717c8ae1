#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <numeric>
#include <optional>
#include <utility>

#include "core/ceiling_names.hpp"
#include "core/cpu_list.hpp"
#include "core/elapsed.hpp"
#include "core/format.hpp"
#include "core/json_io.hpp"
#include "core/partition.hpp"
#include "gpu/device.hpp"
#include "src/cli/devices.hpp"
#include "src/cli/gpu_backend.hpp"
#include "src/cli/sweep_backend.hpp"
#include "src/cli/sweep_time.hpp"
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

class StoreSink final : public PointSink {
 public:
  StoreSink(ResultsStore& store, std::int64_t run_id) : store_(store), run_id_(run_id) {}
  void write(Point& point) override {
    store_.add_point(run_id_, point);
    time.add(point);
  }
  SweepTime time;  // of the points written

 private:
  ResultsStore& store_;
  std::int64_t run_id_;
};

// The line after a sweep's summary: where its measuring time went.
void report_sweep_time(const std::string& sweep, const SweepTime& time, double worker_s) {
  const std::string text = sweep_time_text(time, worker_s);
  if (!text.empty())
    std::fprintf(stderr, "timeroof: %s: time by step: %s\n", sweep.c_str(), text.c_str());
}

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

namespace {

// Records the request's sweep in the run (a resumed run must already hold this
// very sweep), before any GPU work.
void record_sweep(const SweepRequest& request, ResultsStore& store, Run& run) {
  const SweepSpec& spec = request.spec;
  bool recorded = false;  // a resumed run has its spec already
  std::string stored;     // the run's sweeps, for the messages
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
    // Its points' counters must be the same too (--metrics).
    if (sweep.value("metrics", nlohmann::json()) != wanted.value("metrics", nlohmann::json()))
      throw usage_error("--resume " + std::to_string(run.id) + ": run " + std::to_string(run.id) +
                        " measured sweep " + name + " with other --metrics (" +
                        sweep.value("metrics", nlohmann::json::array()).dump() +
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
}

RunnerOptions runner_options(const SweepSpec& spec, bool counters) {
  RunnerOptions options;
  options.timing_worker = own_executable();  // timing in a process CUPTI never attached to
  options.counters = counters;
  options.cold_l2 = spec.cold_l2;
  options.transfer = spec.transfer;
  options.pinned_host = spec.pinned_host;
  options.extra_metrics = spec.metrics;
  return options;
}

void show_sweep_progress(const std::string& name, int done, int total, double elapsed_s,
                         const std::string& current) {
  const double eta = done ? elapsed_s / done * (total - done) : 0;
  std::fprintf(stderr, "\r\033[Ktimeroof: %s [%d/%d] %s%s", name.c_str(), done, total,
               done ? ("ETA " + duration_text(eta) + " ").c_str() : "",
               current.substr(0, 100).c_str());
  if (current.empty()) std::fputs("\r\033[K", stderr);
}

// Counters were asked for and some points got timing only (issue 16: a second
// sweep on a GPU whose counters another process held said `complete`, exit 0).
void report_points_without_counters(const std::string& sweep, int count) {
  if (count == 0) return;
  std::fprintf(stderr,
               "timeroof: %s: %d point(s) have timing but no counters (each says why); the run is "
               "partial. Measure them again once the counters are free, or pass --no-counters "
               "for timing only\n",
               sweep.c_str(), count);
}

bool in_share(const SweepRequest& request, int seq) {
  return !request.only_seqs || request.only_seqs->count(seq);
}

// The seqs this invocation measures: not stored yet, and in its share.
std::vector<int> seqs_to_measure(const SweepRequest& request, const SweepSpec& spec,
                                 const std::set<int>& stored) {
  std::vector<int> seqs;
  for (int seq = 0; seq < static_cast<int>(spec.points.size()); ++seq)
    if (!stored.count(seq) && in_share(request, seq)) seqs.push_back(seq);
  return seqs;
}

// The points of this invocation's share the store already had ("already stored").
int stored_in_share(const SweepRequest& request, const std::set<int>& stored) {
  return static_cast<int>(
      std::count_if(stored.begin(), stored.end(), [&](int seq) { return in_share(request, seq); }));
}

// --devices: the points not stored yet, handed to one worker per GPU longest
// expected time first (the dry run's model with this run's roofs), in shrinking
// chunks to the GPUs that ask first (next_guided_chunk); this process writes what
// the workers send (src/cli/devices.hpp). A chunk's end does not end a counter
// batch: a worker keeps the points waiting for counters between chunks. The
// workers are request.workers where they serve several sweeps, else started for
// this one.
ExitCode measure_sweep_on_devices(const SweepRequest& request, const SweepSpec& spec,
                                  ResultsStore& store, Run& run, bool show_progress) {
  const std::set<int> stored = store.finished_point_seqs(run.id, spec.name);
  const std::vector<int> todo = seqs_to_measure(request, spec, stored);
  DryRunRoofs roofs = roofs_from(&run.machine);
  if (!request.counters) roofs.counter_passes = 0;
  std::optional<WorkerPool> own_workers;
  WorkerPool& pool =
      request.workers ? *request.workers : own_workers.emplace(own_executable(), request.devices);
  const std::vector<int>& devices = pool.devices();
  const auto workers = static_cast<int>(devices.size());
  const std::vector<double> expected = expected_seconds(spec, todo, roofs);
  std::vector<int> queue = longest_first(expected);  // indices into todo
  std::vector<nlohmann::json> jobs;
  // Each worker's points: given to it and not yet back.
  std::vector<std::set<int>> assigned(devices.size());
  std::vector<int> given(devices.size(), 0);
  auto give = [&](std::size_t w, const std::vector<int>& items) {
    nlohmann::json seqs = nlohmann::json::array();
    for (int i : items) {
      seqs.push_back(todo[static_cast<std::size_t>(i)]);
      assigned[w].insert(todo[static_cast<std::size_t>(i)]);
    }
    given[w] += static_cast<int>(items.size());
    return seqs;
  };
  for (std::size_t w = 0; w < devices.size(); ++w) {
    jobs.push_back({{"kind", "sweep"},
                    {"spec", to_json(spec)},  // read once, here: the workers do not parse it again
                    {"counters", request.counters},
                    {"seqs", nlohmann::json::array()},  // it asks for its first chunk
                    {"more", true}});
  }

  const StopOnInterrupt stop_on_interrupt;
  const auto started = std::chrono::steady_clock::now();
  int done = 0, not_ok = 0, duplicates = 0, without_counters = 0;
  SweepTime time;  // of the points stored, summed over the workers
  std::vector<int> measured(devices.size(), 0);
  std::vector<double> seconds(devices.size(), 0);
  std::vector<bool> interrupted(devices.size(), false);
  const std::vector<int> codes = pool.converse(
      jobs,
      [&](int w, const nlohmann::json& line) -> WorkerReply {
        const auto worker = static_cast<std::size_t>(w);
        if (line.contains("gpu") && worker == 0) {  // the run's GPU, inspected by its worker
          const GpuInfo gpu = line["gpu"].get<GpuInfo>();
          if (gpu.uuid == run.machine.gpu.uuid) {
            run.machine.gpu = gpu;
            store.update_run(run);
          }
          return {};
        }
        if (line.contains("more")) {  // the first to ask gets the next chunk
          const std::vector<int> chunk = next_guided_chunk(queue, expected, workers);
          if (chunk.empty()) return {.line = nlohmann::json{{"end", true}}};
          return {.line = nlohmann::json{{"seqs", give(worker, chunk)}}};
        }
        if (line.contains("done")) {
          seconds[worker] = line["done"].value("seconds", 0.0);
          interrupted[worker] = line["done"].value("interrupted", false);
          return {};
        }
        if (!line.contains("point")) return {};
        Point point = line["point"].get<Point>();
        // Only a point of this worker's share, once: a worker can never add to
        // or overwrite another's (the store refuses a seq twice anyway).
        if (point.sweep != spec.name || !assigned[worker].erase(point.seq)) {
          ++duplicates;
          return {};
        }
        store.add_point(run.id, point);
        time.add(point);
        ++measured[worker];
        ++done;
        if (point.status != PointStatus::ok) ++not_ok;
        if (point.status == PointStatus::counters_unavailable) ++without_counters;
        if (show_progress)
          show_sweep_progress(spec.name + " on " + std::to_string(devices.size()) + " GPUs", done,
                              static_cast<int>(todo.size()), seconds_since(started),
                              point.op + " #" + std::to_string(point.seq) + " (GPU " +
                                  std::to_string(devices[worker]) + ")");
        return {};
      },
      [] { return g_stop_requested.load(); });
  if (show_progress) std::fputs("\r\033[K", stderr);

  bool partial = duplicates > 0;
  std::string per_gpu;
  for (std::size_t w = 0; w < devices.size(); ++w) {
    per_gpu += (w ? ", " : "") + std::string("GPU ") + std::to_string(devices[w]) + " " +
               std::to_string(measured[w]) + " in " + duration_text(seconds[w]);
    const bool failed = codes[w] != 0 && codes[w] != static_cast<int>(ExitCode::partial);
    if (failed)
      std::fprintf(stderr,
                   "timeroof: %s: GPU %d's worker ended with exit code %d after %d of its %d "
                   "point(s); the rest stay unmeasured: resume with --resume\n",
                   spec.name.c_str(), devices[w], codes[w], measured[w], given[w]);
    partial = partial || failed || interrupted[w] || !assigned[w].empty();
  }
  partial = partial || !queue.empty();  // no worker was left to take them
  std::fprintf(stderr,
               "timeroof: %s: %d point(s) measured on %zu GPUs (%s), %d not ok, %d already "
               "stored (%s)%s\n",
               spec.name.c_str(), done, devices.size(), per_gpu.c_str(), not_ok,
               stored_in_share(request, stored), duration_text(seconds_since(started)).c_str(),
               g_stop_requested ? "; interrupted: resume with --resume" : "");
  report_sweep_time(spec.name, time, std::accumulate(seconds.begin(), seconds.end(), 0.0));
  if (duplicates)
    std::fprintf(stderr, "timeroof: %s: %d point(s) sent twice or out of share were dropped\n",
                 spec.name.c_str(), duplicates);
  report_points_without_counters(spec.name, without_counters);
  return partial || g_stop_requested || without_counters > 0 ? ExitCode::partial : ExitCode::ok;
}

// Writes each finished point as a line {"point": ...} on stdout, for the parent.
class JsonLineSink final : public PointSink {
 public:
  explicit JsonLineSink(const GpuInfo& gpu) : gpu_(gpu) {}
  void write(Point& point) override {
    point.details["gpu"] = {{"index", gpu_.index}, {"name", gpu_.name}, {"uuid", gpu_.uuid}};
    std::cout << nlohmann::json{{"point", point}}.dump() << std::endl;  // flushed: one per point
  }

 private:
  const GpuInfo& gpu_;
};

}  // namespace

ExitCode measure_sweep(const SweepRequest& request, ResultsStore& store, Run& run,
                       bool show_progress) {
  record_sweep(request, store, run);  // no GPU work before this
  const SweepSpec& spec = request.spec;
  if (!request.devices.empty())
    return measure_sweep_on_devices(request, spec, store, run, show_progress);
  SweepRunner runner(run.machine.gpu, runner_options(spec, request.counters));
  const OperatorFamily& family = find_family(spec.family);
  const SweepPlan plan{spec.name, &family, spec.points};
  StoreSink sink(store, run.id);
  const StopOnInterrupt stop_on_interrupt;
  const std::set<int> stored = store.finished_point_seqs(run.id, spec.name);
  // Stored, or another process's share.
  const std::set<int> skipped = all_seqs_but(spec, seqs_to_measure(request, spec, stored));
  const SweepOutcome outcome =
      runner.run(plan, skipped, sink, g_stop_requested, [&](const SweepProgress& p) {
        if (show_progress) show_sweep_progress(spec.name, p.done, p.total, p.elapsed_s, p.current);
      });
  std::fprintf(stderr, "timeroof: %s: %d point(s) measured, %d not ok, %d already stored (%s)%s\n",
               spec.name.c_str(), outcome.measured, outcome.not_ok,
               stored_in_share(request, stored), duration_text(outcome.seconds).c_str(),
               outcome.interrupted ? "; interrupted: resume with --resume" : "");
  report_sweep_time(spec.name, sink.time, outcome.seconds);
  report_points_without_counters(spec.name, outcome.without_counters);
  return outcome.interrupted || outcome.without_counters > 0 ? ExitCode::partial : ExitCode::ok;
}

namespace {

// The "sweep" job of a device worker: measures the seqs it was given on its GPU
// (`gpu`, inspected once per worker) and sends each point to the parent as it
// is done.
ExitCode serve_sweep_job(const GpuInfo& gpu, const nlohmann::json& job) {
  const SweepSpec spec = spec_from_json(job.at("spec"));
  const bool counters = job.at("counters").get<bool>();
  std::vector<int> seqs = job.at("seqs").get<std::vector<int>>();
  const bool asks_for_more = job.value("more", false);
  std::cout << nlohmann::json{{"gpu", gpu}}.dump() << std::endl;
  SweepRunner runner(gpu, runner_options(spec, counters));
  const OperatorFamily& family = find_family(spec.family);
  JsonLineSink sink(gpu);
  const StopOnInterrupt stop_on_interrupt;
  const SweepPlan plan{spec.name, &family, spec.points};
  int measured = 0, not_ok = 0;
  double seconds = 0;
  bool interrupted = false;
  auto measure = [&](const std::set<int>& finished, SweepRunner::LastBatch last_batch) {
    const SweepOutcome outcome =
        runner.run(plan, finished, sink, g_stop_requested, nullptr, last_batch);
    measured += outcome.measured;
    not_ok += outcome.not_ok;
    seconds += outcome.seconds;
    interrupted = interrupted || outcome.interrupted;
  };
  // Between chunks the points waiting for their counters stay waiting, so
  // chunks add no counter collections; the last call writes them.
  const auto between_chunks =
      asks_for_more ? SweepRunner::LastBatch::keep : SweepRunner::LastBatch::write;
  for (;;) {
    if (!seqs.empty())  // a first share may be empty: then it only takes chunks
      measure(all_seqs_but(spec, seqs), between_chunks);
    if (!asks_for_more || interrupted || g_stop_requested) break;
    std::cout << nlohmann::json{{"more", true}}.dump() << std::endl;
    std::string line;  // the parent's answer: more seqs, the job's end, or end of input
    if (!std::getline(std::cin, line)) break;
    const nlohmann::json answer =
        parse_untrusted_json(line, "device-worker's next seqs", "internal");
    if (!answer.contains("seqs")) break;  // {"end": true}
    seqs = answer.at("seqs").get<std::vector<int>>();
  }
  measure(all_seqs_but(spec, {}), SweepRunner::LastBatch::write);  // what the last chunk kept
  interrupted = interrupted || g_stop_requested;
  std::cout << nlohmann::json{{"done",
                               {{"measured", measured},
                                {"not_ok", not_ok},
                                {"interrupted", interrupted},
                                {"seconds", seconds}}}}
                   .dump()
            << std::endl;
  return interrupted ? ExitCode::partial : ExitCode::ok;
}

ExitCode serve_device_job(int device, const nlohmann::json& job, std::optional<GpuInfo>& gpu) {
  const std::string kind = job.value("kind", std::string());
  if (kind == "sweep") {
    if (!gpu) {
      select_gpu(device);
      gpu = inspect_gpu(device);  // with the counter probe: counters or not
    }
    return serve_sweep_job(*gpu, job);
  }
  if (kind == "ceilings") {
    Machine machine;
    machine.gpu = query_gpu(device);  // counters probed after the roofs, as in one process
    CeilingOptions options;
    options.quick = job.value("quick", false);
    options.only = job.value("only", std::vector<std::string>());
    options.host_lock = job.value("host_lock", std::string());
    options.sustained_seconds = job.value("sustained_seconds", 0.0);
    options.show_progress = false;  // several workers share the terminal
    measure_machine(machine, options);
    std::cout << nlohmann::json{{"machine", machine}}.dump() << std::endl;
    return ExitCode::ok;
  }
  if (kind == "host_window") {
    std::cout << nlohmann::json{{"host_window",
                                 measure_host_window(
                                     device, job.at("roofs").get<std::vector<std::string>>(),
                                     job.value("quick", false), job.value("windows", 1))}}
                     .dump()
              << std::endl;
    return ExitCode::ok;
  }
  if (kind == "interconnect") {
    const Machine machine =
        measure_interconnect(job.at("devices").get<std::vector<int>>(), job.value("quick", false));
    std::cout << nlohmann::json{{"machine", machine}}.dump() << std::endl;
    return ExitCode::ok;
  }
  throw usage_error("device-worker: unknown job kind '" + kind + "'");
}

// Keeps this worker to the CPUs local to its GPU (the local_cpulist sysfs gives
// for its PCI device) where they are fewer than it may use, so two workers'
// host work (launches, CUPTI's decoding, timing loops) neither crosses a socket
// nor shares cores. TIMEROOF_WORKER_CPUS=all leaves it on every CPU. Returns
// what it did, for one line on stderr.
std::string keep_worker_near_gpu(int device) {
  const char* choice = std::getenv("TIMEROOF_WORKER_CPUS");
  const std::string wanted = choice ? choice : "local";
  if (wanted == "all") return "on every allowed CPU (TIMEROOF_WORKER_CPUS=all)";
  if (wanted != "local")
    throw usage_error("TIMEROOF_WORKER_CPUS=" + wanted + ": use local (the default) or all");
  std::string bus = pci_bus_id(device);
  std::transform(bus.begin(), bus.end(), bus.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string path = "/sys/bus/pci/devices/" + bus + "/local_cpulist";
  std::ifstream file(path);
  std::string text;
  if (!std::getline(file, text)) return "on every allowed CPU (" + path + " unreadable)";
  std::vector<int> local;
  try {
    local = parse_cpu_list(text);
  } catch (const Error& e) {
    return std::string("on every allowed CPU (") + path + ": " + e.what() + ")";
  }
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> near;
  std::set_intersection(allowed.begin(), allowed.end(), local.begin(), local.end(),
                        std::back_inserter(near));
  if (near.empty() || near.size() == allowed.size())
    return "on CPUs " + format_cpu_list(allowed) + " (the GPU's local CPUs are " +
           format_cpu_list(local) + ")";
  const std::string failure = keep_to_cpus(near);
  if (!failure.empty()) return "on every allowed CPU (" + failure + ")";
  return "on CPUs " + format_cpu_list(near) + ", local to the GPU (of " + format_cpu_list(allowed) +
         ")";
}

}  // namespace

// Jobs until the input ends: one for `run_workers`, a sweep after another for a
// WorkerPool (the GPU selected and inspected once).
ExitCode serve_device_worker(int device) {
  const std::string placed = keep_worker_near_gpu(device);
  std::optional<GpuInfo> gpu;
  ExitCode code = ExitCode::ok;
  bool any = false;
  std::string line;
  while (!g_stop_requested && std::getline(std::cin, line)) {
    const nlohmann::json job = parse_untrusted_json(line, "device-worker's job", "internal");
    // A host window's worker is one of several short ones of a ceilings run: quiet.
    if (!any && job.value("kind", std::string()) != "host_window")
      std::fprintf(stderr, "timeroof: GPU %d's worker %s\n", device, placed.c_str());
    any = true;
    code = serve_device_job(device, job, gpu);
  }
  if (!any && !g_stop_requested)
    throw usage_error("device-worker: no job on stdin (it is started by --devices)");
  return code;
}

ExitCode serve_timing_worker(int device) {
  select_gpu(device);
  serve_timing_requests(std::cin, std::cout, query_gpu(device));
  return ExitCode::ok;
}

}  // namespace timeroof::cli
