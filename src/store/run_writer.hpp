// Who writes a run, and the lock that keeps a second writer off it (issue 16).
//
// A run's row says "running" from its first commit to its last, so a writer
// killed in between (kill -9, out of memory, power lost) left it "running" for
// ever. The store now records the writing process with the run, and a reader
// tells from it whether that process still exists: on the same host, the same
// boot and the same pid namespace, a pid that is gone, or taken by a process
// started at another time, is provably not the writer. From another host
// nothing can be told.
//
// The state is derived when a run is read, never written back: read commands
// open the store read-only (and may lack write access), a later writer would
// have to judge every other run it never touches, and a writer that seems gone
// for a moment (a pid namespace it cannot see) would be marked dead for good.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace timeroof {

// One process, as another process on the same machine can recognise it later.
struct WriterIdentity {
  std::string host;           // gethostname
  std::string boot_id;        // /proc/sys/kernel/random/boot_id: a reboot ends every writer
  std::string pid_namespace;  // /proc/self/ns/pid, e.g. "pid:[4026531836]"
  std::int64_t pid = 0;
  // Start time in clock ticks after boot (/proc/PID/stat field 22): a reused pid
  // has another one.
  std::int64_t start_ticks = 0;
  std::string since;  // ISO 8601 UTC: when it took the run
  bool operator==(const WriterIdentity&) const = default;
};

// This process.
WriterIdentity this_writer();
// The host name as new_run stamps it.
std::string this_host();

enum class WriterState {
  alive,    // this host, boot and pid namespace: the process is there
  gone,     // provably not running any more
  unknown,  // another host or pid namespace, or /proc does not say
};

WriterState writer_state(const WriterIdentity& writer);

// The store's writer_json column. An unreadable text (edited by hand) is no
// writer: the run's status is then shown as stored.
std::string to_text(const WriterIdentity& writer);
std::optional<WriterIdentity> writer_from_text(const std::string& text);

// "pid 1234 on gpu-node-7 (since 2026-11-26T17:40:00Z)"
std::string describe(const WriterIdentity& writer);

// Per-run write locks: byte `run id` of the file STORE.lock beside the store, held
// with open-file-description locks (fcntl F_OFD_SETLK). The kernel drops them
// when the process ends, however it ends, so a killed writer never leaves a run
// locked; two stores open in one process hold them apart, as two processes do.
// The last writer to let go removes the file: read commands never create it.
class RunLocks {
 public:
  explicit RunLocks(std::string store_path);
  ~RunLocks();
  RunLocks(RunLocks&& other) noexcept;
  RunLocks& operator=(RunLocks&& other) noexcept;
  RunLocks(const RunLocks&) = delete;
  RunLocks& operator=(const RunLocks&) = delete;

  // true: this object now holds run_id's lock (or held it already); false:
  // another holds it. Never waits. Throws an environment error naming the file
  // when it cannot be created or locked.
  bool try_lock(std::int64_t run_id);
  // Lets go of one run (a begin_run whose transaction failed).
  void unlock(std::int64_t run_id) noexcept;
  const std::string& path() const noexcept { return path_; }

 private:
  void release() noexcept;

  std::string path_;
  int fd_ = -1;
  std::set<std::int64_t> held_;  // runs locked: while any is, no one removes the file
};

}  // namespace timeroof
