// Several GPUs of one node (--devices): one worker process per GPU, each owning
// its GPU, its CUDA context and its counters (CUPTI's range profiler is per
// process), started as `timeroof device-worker --device N` from this very
// executable. This parent never touches a GPU for the work itself: it sends each
// worker one job (a JSON line on its stdin), reads what the worker measured as
// JSON lines on its stdout, and is the store's one writer, so no point is lost
// or written twice whatever the workers do.
//
// Jobs, one JSON object per line, each answered by lines on the worker's stdout:
//   {"kind": "ceilings", "quick", "only": [...], "host_lock": PATH}
//       -> {"machine": Machine}: the GPU's roofs. Workers measuring at the same
//          time take turns, by an flock on host_lock, for the roofs that share
//          the host (launch and host<->device transfer roofs).
//   {"kind": "sweep", "spec": SweepSpec (sweeps/spec.hpp to_json), "counters",
//    "seqs", "more"}
//       -> {"point": Point} per point as soon as it is measured. With "more",
//          the worker then asks {"more": true} and reads the parent's answer
//          on its stdin, {"seqs": [...]} to measure next, until {"end": true}
//          or end of input. Last {"done": {"measured", "not_ok", "interrupted",
//          "seconds"}}.
//   {"kind": "interconnect", "devices": [...], "quick"}
//       -> {"machine": Machine} holding only the interconnect roofs (P2P copy
//          bandwidth and latency per pair, NCCL all-reduce where installed).
// A worker reads jobs until its input ends, so one worker per GPU can measure
// every sweep of a `run` in turn (WorkerPool): its CUDA context, libraries and
// counter probe are set up once, not once per sweep.
// Ctrl-C reaches the workers (the terminal signals the whole process group;
// the parent forwards it too): each finishes its current point, sends it and
// exits 3, as one GPU does.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace timeroof::cli {

// The form of --devices alone, before any GPU is looked for: nullopt for "all",
// else the indices "0,2,5" names; a usage error naming the entry that is no index.
std::optional<std::vector<int>> parse_device_list(const std::string& text);
// "all" -> 0..gpu_count-1; "0,2,5" -> {0, 2, 5}. A usage error naming the bad
// entry and the GPUs there are. A GPU named twice is allowed only where
// `counters` is false (two processes' counters on one GPU would collide): two
// timing-only workers on one GPU test the machinery on a one-GPU machine.
std::vector<int> parse_devices(const std::string& text, int gpu_count, bool counters);

// One worker: `executable device-worker --device N`, its stdin and stdout pipes
// to this process, its stderr this process's. Its input ends after the job
// unless `keep_input` (a worker that asks for more).
class WorkerProcess {
 public:
  // No job (nullopt): the worker waits for one on its input (keep_input).
  WorkerProcess(const std::string& executable, int device, const std::optional<nlohmann::json>& job,
                bool keep_input = false);
  ~WorkerProcess();  // kills a worker still running (an exception unwinding) and reaps it
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  int device() const noexcept { return device_; }
  pid_t pid() const noexcept { return pid_; }
  int output() const noexcept { return output_; }
  // Reads what is available; complete lines go to `on_line`. False at end of output.
  bool read_available(const std::function<void(const nlohmann::json&)>& on_line);
  // Waits for the worker to exit; its exit code (128 + signal when killed).
  int wait();
  // Sends SIGINT once (the worker finishes its current point).
  void interrupt();
  // Writes one line to the worker's stdin; false once it is closed or the
  // worker has gone.
  bool send(const nlohmann::json& line);
  // Ends the worker's input: it reads end of file.
  void close_input();

 private:
  int device_;
  pid_t pid_ = -1;
  int input_ = -1;
  int output_ = -1;
  std::string buffered_;
  bool interrupted_ = false;
  bool reaped_ = false;
  int exit_code_ = 0;
};

// Runs one job per device at once and calls on_line(worker, line) for every line
// any worker sends, as it comes. Checks `stop` while waiting: once it is set,
// every worker is interrupted. Returns each worker's exit code, in order.
std::vector<int> run_workers(const std::string& executable, const std::vector<int>& devices,
                             const std::vector<nlohmann::json>& jobs,
                             const std::function<void(int, const nlohmann::json&)>& on_line,
                             const std::function<bool()>& stop);

// What the parent answers a worker's line with, in WorkerPool::converse.
struct WorkerReply {
  std::optional<nlohmann::json> line;  // sent to the worker's stdin
};

// One worker per device kept for several jobs in turn (the sweeps of one
// `run --devices`). A job ends with the worker's {"done": ...} line; the worker
// then waits for the next. The workers' input ends when the pool goes.
class WorkerPool {
 public:
  WorkerPool(const std::string& executable, const std::vector<int>& devices);
  ~WorkerPool();  // ends the workers' input and waits for them (kills them while unwinding)
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  const std::vector<int>& devices() const noexcept { return devices_; }
  // As run_workers, on these workers, for jobs whose workers ask for more: each
  // gets its job and every line it sends can be answered, until each has sent
  // {"done"} or gone. Once `stop` is set, every worker is interrupted and its
  // input closed. Returns per worker 0 when it finished the job,
  // else its exit code. A worker that has gone (it died, or `stop` ended it) is
  // started afresh for the next job, as a job without a pool would be.
  std::vector<int> converse(const std::vector<nlohmann::json>& jobs,
                            const std::function<WorkerReply(int, const nlohmann::json&)>& on_line,
                            const std::function<bool()>& stop);

 private:
  std::string executable_;
  std::vector<int> devices_;
  std::vector<std::unique_ptr<WorkerProcess>> workers_;
  std::vector<bool> gone_;
};

// This program's own path ("" where /proc/self/exe cannot be read).
std::string own_executable();

}  // namespace timeroof::cli
