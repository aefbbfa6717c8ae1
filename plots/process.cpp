#include "plots/process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>

namespace timeroof::plots::detail {

std::string find_on_path(const std::string& program) {
  const char* env = std::getenv("PATH");
  const std::string dirs = env ? env : "";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    start = end + 1;
    if (dir.empty()) continue;  // "." by POSIX; never run a program from the working directory
    const std::string path = (std::filesystem::path(dir) / program).string();
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0) return path;
  }
  return {};
}

pid_t spawn_silent(const std::vector<std::string>& argv) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int started = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return started == 0 ? pid : -1;
}

std::pair<int, std::string> run_quietly(const std::vector<std::string>& argv) {
  int err[2];
  if (pipe(err) != 0) return {-1, "cannot create a pipe"};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, err[0]);
  posix_spawn_file_actions_addclose(&actions, err[1]);
  std::vector<char*> args;
  std::vector<std::string> copy = argv;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int started = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(err[1]);
  std::string text;
  char buffer[4096];
  ssize_t n = 0;
  // Read to EOF before waiting, so a chatty child never blocks on a full pipe.
  while ((n = read(err[0], buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
  close(err[0]);
  if (started != 0) return {-1, std::string("cannot start: ") + std::strerror(started)};
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  text = text.substr(0, text.find('\n'));
  return {code, text};
}

std::vector<std::size_t> run_all_silent(const std::vector<std::vector<std::string>>& commands,
                                        std::size_t jobs) {
  jobs = std::max<std::size_t>(jobs, 1);
  std::deque<std::pair<pid_t, std::size_t>> running;  // pid, command
  std::vector<std::size_t> failed;
  auto reap_oldest = [&] {
    int status = 0;
    while (waitpid(running.front().first, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed.push_back(running.front().second);
    running.pop_front();
  };
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (running.size() >= jobs) reap_oldest();
    const pid_t pid = spawn_silent(commands[i]);
    if (pid > 0)
      running.emplace_back(pid, i);
    else
      failed.push_back(i);
  }
  while (!running.empty()) reap_oldest();
  return failed;
}

}  // namespace timeroof::plots::detail
