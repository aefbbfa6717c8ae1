// Locks of the injection library's recorders held across fork(), so a forked
// child (a DataLoader worker) gets each recorder's state consistent, with its
// lock free, and drops what it holds for the parent: the parent writes its own
// records, and a child that runs atexit would otherwise write them again under
// its own pid.
#pragma once

#include <functional>
#include <mutex>

namespace timeroof::inject {

// From now on fork() locks `mutex` before it forks and unlocks it after, in the
// child after `clear_in_child` ran (which must not take `mutex`). For state a
// process never destroys: the handlers stay. A mutex already held across fork
// is left as it is. Throws where pthread_atfork cannot register, or when more
// than a few states ask.
void hold_across_fork(std::mutex& mutex, std::function<void()> clear_in_child);

}  // namespace timeroof::inject
