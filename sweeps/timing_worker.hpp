// Timing in a process that never loads CUPTI. CUPTI, once a process has used
// its activity API or range profiler, stays attached: on an H100 a small conv's
// host issue time read 1.4-2.6x higher after one activity trace
// (bench/harness_overhead E1), so every point timed after the first trace of a
// sweep would carry it. The runner therefore times each point in a worker
// process (`timeroof timing-worker`, started once per runner) that builds and
// prepares its own copy of the operator, with the algorithm the runner chose
// pinned, and runs warm-up and the timing strategies only; the runner itself
// checks, traces and counts. The two processes never use the GPU at the same
// time: the runner waits for each reply.
//
// Protocol, one JSON object per line over a socket pair on the worker's stdin
// and stdout: request {"family", "params", "window" ("first" or "revisit", see
// runner.hpp), "options": {"cold_l2", "transfer", "pinned_host"}}; reply {"status", "reason",
// "algorithm", "timing" (Timing), "details" (details["timing"])}. The worker ignores SIGINT (the
// runner decides when to stop) and exits when its input ends.
#pragma once

#include <sys/types.h>

#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "core/results.hpp"

namespace timeroof {

struct RunnerOptions;
enum class TimingWindow;

class TimingWorker {
 public:
  // Starts `executable timing-worker --device N`; throws timeroof::Error with the
  // reason when it cannot be started.
  TimingWorker(const std::string& executable, int device);
  ~TimingWorker();  // ends the worker's input and reaps it (killed after 10 s)
  TimingWorker(const TimingWorker&) = delete;
  TimingWorker& operator=(const TimingWorker&) = delete;

  // The worker's reply for one point; throws timeroof::Error when the worker
  // died or replied with something that is not a reply (the runner then times
  // the point itself and says why).
  nlohmann::json time(const std::string& family, const nlohmann::json& params,
                      const RunnerOptions& options, TimingWindow window);
  pid_t pid() const noexcept { return pid_; }

 private:
  std::string read_line();
  pid_t pid_ = -1;
  int socket_ = -1;
  std::string buffered_;
};

// The worker's side: answers each request line of `in` on `out` until `in` ends.
// `gpu` describes the device the worker times on.
void serve_timing_requests(std::istream& in, std::ostream& out, const GpuInfo& gpu);

}  // namespace timeroof
