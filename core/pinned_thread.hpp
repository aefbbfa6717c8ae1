// Keeps the calling (measuring) thread on the core it runs on for the object's
// lifetime, and restores its previous affinity after. A thread the scheduler
// moves between cores mid-measurement loses its caches and may land on a busy
// core: host issue times then jump between runs.
#pragma once

#include <optional>
#include <string>

#include <sched.h>

namespace timeroof {

class PinnedThread {
 public:
  PinnedThread();  // never throws: a refused pin leaves the thread as it was
  ~PinnedThread();
  PinnedThread(const PinnedThread&) = delete;
  PinnedThread& operator=(const PinnedThread&) = delete;

  std::optional<int> core() const noexcept { return core_; }        // nullopt: not pinned
  const std::string& failure() const noexcept { return failure_; }  // why not pinned

 private:
  cpu_set_t previous_{};
  std::optional<int> core_;
  std::string failure_;
};

}  // namespace timeroof
