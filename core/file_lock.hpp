// An exclusive advisory lock on a file (flock), held for the life of the object:
// worker processes measuring several GPUs at once take turns with it for the
// roofs that share the host (launch cost, host<->device copies).
#pragma once

#include <string>

namespace timeroof {

class FileLock {
 public:
  // Blocks until the lock is held; an empty path locks nothing. Throws an
  // environment error naming the path when it cannot be opened or locked.
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace timeroof
