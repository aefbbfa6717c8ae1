// The host's speed at the moment of a measurement: a fixed CPU workload (a
// dependent chain of integer multiply-adds, no memory traffic, no system call)
// timed on the steady clock. Host-bound times (the issue time, T_stream and
// T_call of launch-bound calls) scale with it; the GPU's times do not. On the
// shared H100 virtual machines the same call's issue time switched between two
// levels ~1.45x apart within one process and on one pinned core: recording the
// probe beside each point shows whether a difference between two runs is the
// host's speed rather than the operator or the harness.
#pragma once

namespace timeroof {

// Median seconds of `repeats` runs of the fixed workload (~20 us each on a
// 3 GHz core).
double host_probe_seconds(int repeats = 7);

}  // namespace timeroof
