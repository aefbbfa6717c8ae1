#include "inject/fork_guard.hpp"

#include <pthread.h>

#include <array>
#include <stdexcept>
#include <utility>

namespace timeroof::inject {
namespace {

struct Guarded {
  std::mutex* mutex = nullptr;
  std::function<void()> clear_in_child;
};

// A fixed table: the handlers run while fork() holds the allocator's locks.
constexpr std::size_t kMaxGuarded = 4;
std::mutex g_registering;  // the two below
std::array<Guarded, kMaxGuarded> g_guarded;
std::size_t g_count = 0;

// The registry's own lock too: no state is added between the locking and the unlocking.
void lock_all() {
  g_registering.lock();
  for (std::size_t i = 0; i < g_count; ++i) g_guarded[i].mutex->lock();
}

void unlock_all() {
  for (std::size_t i = g_count; i-- > 0;) g_guarded[i].mutex->unlock();
  g_registering.unlock();
}

void clear_and_unlock_all() {
  for (std::size_t i = 0; i < g_count; ++i) g_guarded[i].clear_in_child();
  unlock_all();
}

}  // namespace

void hold_across_fork(std::mutex& mutex, std::function<void()> clear_in_child) {
  std::lock_guard<std::mutex> lock(g_registering);
  const std::size_t n = g_count;
  for (std::size_t i = 0; i < n; ++i)
    if (g_guarded[i].mutex == &mutex) return;  // locked twice at a fork would deadlock
  if (n == 0 && pthread_atfork(&lock_all, &unlock_all, &clear_and_unlock_all) != 0)
    throw std::runtime_error("pthread_atfork failed: no memory for its handlers");
  if (n == kMaxGuarded) throw std::logic_error("hold_across_fork: too many states");
  g_guarded[n] = {&mutex, std::move(clear_in_child)};
  g_count = n + 1;
}

}  // namespace timeroof::inject
