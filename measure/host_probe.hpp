// The host's speed at the moment of a measurement, by three fixed workloads
// timed on the steady clock, each the median of a few runs:
// - compute: a dependent chain of integer multiply-adds (the core's speed);
// - memory: a dependent chain of loads through a 64 MiB random cycle, most of
//   them missing the last-level cache (the memory system's latency, which other
//   tenants of a shared host move);
// - kernel: system calls into the OS (getppid), the cost of crossing into it.
// Host-bound times (the issue time, T_stream and T_call of launch-bound calls)
// scale with the host's speed; the GPU's times do not. On the shared H100
// virtual machines an LSTM call's issue time moved between levels ~1.45x apart,
// the same for eight separately prepared instances at the same moment (so not a
// property of the instance), while the compute probe stayed within 5%:
// recording all three beside each point says which part of the host moved when
// two runs differ.
#pragma once

#include <optional>

namespace timeroof {

struct HostProbe {
  double compute_s = 0;  // 60,000 dependent multiply-adds (~20 us at 3 GHz)
  double memory_s = 0;   // 2,000 dependent loads over 64 MiB (~100-200 us)
  double kernel_s = 0;   // 200 getppid() system calls
};

// Median seconds of `repeats` runs of each workload. The memory probe's cycle is
// built once per process (~0.2 s) on first use.
HostProbe probe_host(int repeats = 5);

// The compute workload alone (median of `repeats`).
double host_probe_seconds(int repeats = 7);

// Seconds the hypervisor ran something else while one of this machine's cores
// wanted to run ("steal" in /proc/stat) since boot: for one core, or summed over
// all (core < 0). nullopt where /proc/stat has no such line. The difference over
// a measurement says whether a slow host-bound time was the host's being taken
// away, which no harness can remove.
std::optional<double> steal_seconds(int core = -1);

}  // namespace timeroof
