#include "tests/support/run_tool.hpp"

#include "core/gzip.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace timeroof::test {

std::string tool_binary() {
  const char* path = std::getenv("TIMEROOF_TEST_BINARY");
  return path ? path : TIMEROOF_BINARY;
}

std::string source_dir() {
  const char* path = std::getenv("TIMEROOF_TEST_SOURCE_DIR");
  return path ? path : TIMEROOF_SOURCE_DIR;
}

ToolResult run_tool(const std::vector<std::string>& args,
                    const std::vector<std::pair<std::string, std::string>>& env,
                    int limit_seconds) {
  std::vector<std::string> argv{tool_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, env, limit_seconds);
}

ToolResult run_process(const std::vector<std::string>& args,
                       const std::vector<std::pair<std::string, std::string>>& env,
                       int limit_seconds) {
  // Close-on-exec: a process another thread starts meanwhile must not hold these
  // pipes open (the reads below would wait for it too). The child's dup2 clears
  // the flag on its stdout and stderr.
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  std::vector<std::string> arguments = args;
  std::vector<char*> argv;
  for (std::string& a : arguments) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The environment with `env` set in order, as setenv would: a later entry for
  // a name replaces an earlier one.
  std::vector<std::string> variables(
      environ, environ + [] {
        std::size_t n = 0;
        while (environ[n] != nullptr) ++n;
        return n;
      }());
  for (const auto& [name, value] : env) {
    std::erase_if(variables, [&name = name](const std::string& variable) {
      return variable.compare(0, name.size() + 1, name + "=") == 0;
    });
    variables.push_back(name + "=" + value);
  }
  std::vector<char*> envp;
  for (std::string& v : variables) envp.push_back(v.data());
  envp.push_back(nullptr);
  // posix_spawn, not fork: it copies no page tables (a sanitized test process maps
  // terabytes of shadow memory) and is safe while other threads run.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  pid_t child = -1;
  const int spawned = posix_spawn(&child, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    ToolResult failed;
    failed.exit_code = 127;  // as a shell says for a program it cannot run
    failed.err = std::string("cannot run ") + argv[0] + ": " + std::strerror(spawned) + "\n";
    return failed;
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ToolResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  char buffer[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_seconds);
  bool killed = false;
  while (open_count > 0) {
    int wait_ms = -1;
    if (limit_seconds > 0 && !killed) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      wait_ms = static_cast<int>(std::max<std::int64_t>(left.count(), 0));
    }
    const int ready = poll(fds, 2, wait_ms);
    if (ready < 0) break;
    if (ready == 0) {  // past the limit: the pipes close when the process is gone
      kill(child, SIGKILL);
      killed = true;
      continue;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "timeroof-test-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string read_export_text(const std::string& path) {
  return inflate_if_gzip(read_file(path), path, "a test fixture");
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

int count_lines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  if (!text.empty() && text.back() != '\n') ++lines;
  return lines;
}

std::size_t count_occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

}  // namespace timeroof::test
