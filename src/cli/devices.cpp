#include "src/cli/devices.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>

#include "core/error.hpp"

extern char** environ;

namespace timeroof::cli {

namespace {

Error worker_error(int device, const std::string& what) {
  return environment_error("GPU " + std::to_string(device) + "'s worker: " + what);
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace

std::optional<std::vector<int>> parse_device_list(const std::string& text) {
  if (text == "all") return std::nullopt;
  std::vector<int> devices;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string entry = text.substr(start, comma - start);
    const bool digits = !entry.empty() && entry.size() <= 4 &&
                        entry.find_first_not_of("0123456789") == std::string::npos;
    if (!digits)
      throw usage_error("'" + entry + "' is not a GPU index; give all or indices like 0,2,5");
    devices.push_back(std::stoi(entry));
    start = comma + 1;
  }
  return devices;
}

std::vector<int> parse_devices(const std::string& text, int gpu_count, bool counters) {
  const std::string there = "this machine has " + std::to_string(gpu_count) + " GPU(s)" +
                            (gpu_count > 0 ? ", 0.." + std::to_string(gpu_count - 1) : "");
  std::optional<std::vector<int>> listed;
  try {
    listed = parse_device_list(text);
  } catch (const Error& error) {
    throw usage_error("--devices: " + std::string(error.what()) + " (" + there + ")");
  }
  std::vector<int> devices;
  if (!listed) {
    for (int d = 0; d < gpu_count; ++d) devices.push_back(d);
  } else {
    devices = *listed;
    for (int device : devices)
      if (device >= gpu_count)
        throw usage_error("--devices: no GPU " + std::to_string(device) + " (" + there + ")");
  }
  if (devices.empty()) throw usage_error("--devices: no GPU here (" + there + ")");
  for (std::size_t i = 0; i < devices.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (devices[i] == devices[j] && counters)
        throw usage_error("--devices: GPU " + std::to_string(devices[i]) +
                          " is named twice; two workers' counters on one GPU would collide "
                          "(name each GPU once, or add --no-counters)");
  return devices;
}

std::string own_executable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string();
}

WorkerProcess::WorkerProcess(const std::string& executable, int device,
                             const std::optional<nlohmann::json>& job, bool keep_input)
    : device_(device) {
  int input[2], output[2];
  if (pipe2(input, O_CLOEXEC) != 0) throw worker_error(device, std::strerror(errno));
  if (pipe2(output, O_CLOEXEC) != 0) {
    close(input[0]);
    close(input[1]);
    throw worker_error(device, std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, input[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO);
  const std::string device_text = std::to_string(device);
  std::string name = "device-worker", flag = "--device";
  char* argv[] = {const_cast<char*>(executable.c_str()), name.data(), flag.data(),
                  const_cast<char*>(device_text.c_str()), nullptr};
  const int spawned = posix_spawn(&pid_, executable.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(input[0]);
  close(output[1]);
  output_ = output[0];
  if (spawned != 0) {
    close(input[1]);
    close_fd(output_);
    pid_ = -1;
    throw worker_error(device, "cannot start " + executable + ": " + std::strerror(spawned));
  }
  input_ = input[1];
  if (job) send(*job);  // a worker that died at once: wait() reports it
  if (!keep_input) close_input();
}

bool WorkerProcess::send(const nlohmann::json& value) {
  if (input_ < 0) return false;
  // Lines are short (a job, a list of seqs): each fits the pipe's buffer, so a
  // worker busy measuring never blocks this process.
  const std::string line = value.dump() + "\n";
  // A worker that has gone must not take this process down with SIGPIPE.
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = write(input_, line.data() + sent, line.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  sigaction(SIGPIPE, &previous, nullptr);
  if (sent < line.size()) close_input();
  return sent == line.size();
}

void WorkerProcess::close_input() {
  close_fd(input_);
}

WorkerProcess::~WorkerProcess() {
  close_fd(input_);
  close_fd(output_);
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

bool WorkerProcess::read_available(const std::function<void(const nlohmann::json&)>& on_line) {
  char chunk[65536];
  const ssize_t got = read(output_, chunk, sizeof chunk);
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (got <= 0) {
    close_fd(output_);
    return false;
  }
  buffered_.append(chunk, static_cast<std::size_t>(got));
  std::size_t end;
  while ((end = buffered_.find('\n')) != std::string::npos) {
    const std::string line = buffered_.substr(0, end);
    buffered_.erase(0, end + 1);
    const nlohmann::json value = nlohmann::json::parse(line, nullptr, false);
    if (value.is_object())
      on_line(value);
    else if (!line.empty())  // a library writing to stdout: shown, not lost
      std::fprintf(stderr, "timeroof: [GPU %d] %s\n", device_, line.c_str());
  }
  return true;
}

int WorkerProcess::wait() {
  if (reaped_) return exit_code_;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) {
      status = 0;
      break;
    }
  }
  reaped_ = true;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return exit_code_;
}

void WorkerProcess::interrupt() {
  if (interrupted_ || reaped_ || pid_ <= 0) return;
  interrupted_ = true;
  kill(pid_, SIGINT);
}

namespace {

// The loop of run_workers and WorkerPool::converse: passes every
// line of `workers` to `on_line` as it comes and sends its reply, until each
// worker's output has closed or, with `until_done`, it has sent {"done"}. Once
// `stop` is set, every worker is interrupted and its input closed. Returns
// which workers sent {"done"}.
std::vector<bool> drive(const std::vector<WorkerProcess*>& workers, bool until_done,
                        const std::function<WorkerReply(int, const nlohmann::json&)>& on_line,
                        const std::function<bool()>& stop) {
  std::vector<bool> open(workers.size(), true), done(workers.size(), false);
  bool stopping = false;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> owner;
    for (std::size_t i = 0; i < workers.size(); ++i) {
      if (!open[i]) continue;
      fds.push_back({workers[i]->output(), POLLIN, 0});
      owner.push_back(i);
    }
    if (fds.empty()) break;
    if (!stopping && stop && stop()) {
      stopping = true;
      for (WorkerProcess* w : workers) {
        w->interrupt();
        w->close_input();  // a worker waiting for more work reads end of input
      }
    }
    const int ready = poll(fds.data(), fds.size(), 200);
    if (ready < 0 && errno != EINTR)
      throw environment_error(std::string("waiting for the GPU workers: ") + std::strerror(errno));
    for (std::size_t k = 0; ready > 0 && k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const std::size_t i = owner[k];
      open[i] = workers[i]->read_available([&](const nlohmann::json& line) {
        const WorkerReply reply = on_line(static_cast<int>(i), line);
        if (reply.line && !stopping) workers[i]->send(*reply.line);
        if (stopping) workers[i]->close_input();
        if (until_done && line.contains("done")) done[i] = true;
      });
      if (done[i]) open[i] = false;  // the job is over; the worker waits for the next
    }
  }
  return done;
}

}  // namespace

std::vector<int> run_workers(const std::string& executable, const std::vector<int>& devices,
                             const std::vector<nlohmann::json>& jobs,
                             const std::function<void(int, const nlohmann::json&)>& on_line,
                             const std::function<bool()>& stop) {
  if (executable.empty())
    throw environment_error("cannot start the GPU workers: /proc/self/exe is not readable");
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  std::vector<WorkerProcess*> driven;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    workers.push_back(std::make_unique<WorkerProcess>(executable, devices[i], jobs[i]));
    driven.push_back(workers.back().get());
  }
  drive(
      driven, false,
      [&](int worker, const nlohmann::json& line) {
        on_line(worker, line);
        return WorkerReply{};
      },
      stop);
  std::vector<int> codes;
  for (auto& w : workers) codes.push_back(w->wait());
  return codes;
}

WorkerPool::WorkerPool(const std::string& executable, const std::vector<int>& devices)
    : executable_(executable), devices_(devices), gone_(devices.size(), false) {
  if (executable.empty())
    throw environment_error("cannot start the GPU workers: /proc/self/exe is not readable");
  for (int device : devices)
    workers_.push_back(std::make_unique<WorkerProcess>(executable, device, std::nullopt, true));
}

WorkerPool::~WorkerPool() {
  for (auto& w : workers_) w->close_input();   // each idle worker reads end of input and exits
  if (std::uncaught_exceptions() > 0) return;  // unwinding: ~WorkerProcess kills the rest
  for (auto& w : workers_) w->wait();
}

std::vector<int> WorkerPool::converse(
    const std::vector<nlohmann::json>& jobs,
    const std::function<WorkerReply(int, const nlohmann::json&)>& on_line,
    const std::function<bool()>& stop) {
  std::vector<WorkerProcess*> driven;
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (gone_[i]) {
      workers_[i] = std::make_unique<WorkerProcess>(executable_, devices_[i], std::nullopt, true);
      gone_[i] = false;
    }
    workers_[i]->send(jobs[i]);  // one that died at once: its output ends, drive() sees it
    driven.push_back(workers_[i].get());
  }
  const std::vector<bool> done = drive(driven, true, on_line, stop);
  std::vector<int> codes(workers_.size(), 0);
  const bool stopped = stop && stop();
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (done[i] && !stopped) continue;
    workers_[i]->close_input();  // stopped or gone: no more jobs for this process
    codes[i] = workers_[i]->wait();
    gone_[i] = true;
  }
  return codes;
}

}  // namespace timeroof::cli
