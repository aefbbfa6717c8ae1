#include "core/pinned_thread.hpp"

#include <pthread.h>

#include <cerrno>
#include <cstring>

namespace timeroof {

PinnedThread::PinnedThread() {
  const pthread_t self = pthread_self();
  if (const int error = pthread_getaffinity_np(self, sizeof previous_, &previous_)) {
    failure_ = std::string("pthread_getaffinity_np: ") + std::strerror(error);
    return;
  }
  const int cpu = sched_getcpu();
  if (cpu < 0) {
    failure_ = std::string("sched_getcpu: ") + std::strerror(errno);
    return;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (const int error = pthread_setaffinity_np(self, sizeof one, &one)) {
    failure_ = std::string("pthread_setaffinity_np: ") + std::strerror(error);
    return;
  }
  core_ = cpu;
}

PinnedThread::~PinnedThread() {
  if (core_) pthread_setaffinity_np(pthread_self(), sizeof previous_, &previous_);
}

}  // namespace timeroof
