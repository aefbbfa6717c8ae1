#include "sweeps/timing_worker.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <istream>
#include <map>
#include <memory>
#include <ostream>
#include <thread>

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "sweeps/family.hpp"
#include "sweeps/runner.hpp"

extern char** environ;

namespace timeroof {

namespace {

Error worker_error(const std::string& what) {
  return Error(ExitCode::environment, "timing worker: " + what);
}

nlohmann::json options_json(const RunnerOptions& options) {
  return {{"cold_l2", options.cold_l2},
          {"transfer", to_string(options.transfer)},
          {"pinned_host", options.pinned_host}};
}

}  // namespace

TimingWorker::TimingWorker(const std::string& executable, int device) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    throw worker_error(std::string("socketpair: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO);
  const std::string device_text = std::to_string(device);
  std::string name = "timing-worker", flag = "--device";
  char* argv[] = {const_cast<char*>(executable.c_str()), name.data(), flag.data(),
                  const_cast<char*>(device_text.c_str()), nullptr};
  const int spawned = posix_spawn(&pid_, executable.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(ends[1]);
  if (spawned != 0) {
    close(ends[0]);
    throw worker_error("cannot start " + executable + ": " + std::strerror(spawned));
  }
  socket_ = ends[0];
}

TimingWorker::~TimingWorker() {
  if (socket_ >= 0) {
    shutdown(socket_, SHUT_WR);  // the worker's input ends: it exits
    close(socket_);
  }
  if (pid_ <= 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string TimingWorker::read_line() {
  while (true) {
    const std::size_t end = buffered_.find('\n');
    if (end != std::string::npos) {
      std::string line = buffered_.substr(0, end);
      buffered_.erase(0, end + 1);
      return line;
    }
    char chunk[65536];
    const ssize_t got = recv(socket_, chunk, sizeof chunk, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw worker_error("the worker process ended without a reply");
    buffered_.append(chunk, static_cast<std::size_t>(got));
  }
}

nlohmann::json TimingWorker::time(const std::string& family, const nlohmann::json& params,
                                  const RunnerOptions& options, TimingWindow window) {
  const std::string request =
      nlohmann::json{{"family", family},
                     {"params", params},
                     {"window", window == TimingWindow::first ? "first" : "revisit"},
                     {"options", options_json(options)}}
          .dump() +
      "\n";
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = send(socket_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw worker_error(std::string("cannot send a request: ") + std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
  // Lines that are not a reply (a library writing to stdout) are skipped.
  while (true) {
    const nlohmann::json reply = nlohmann::json::parse(read_line(), nullptr, false);
    if (reply.is_object() && reply.contains("status")) return reply;
  }
}

void serve_timing_requests(std::istream& in, std::ostream& out, const GpuInfo& gpu) {
  signal(SIGINT, SIG_IGN);  // Ctrl-C is the runner's to handle: it finishes the point
  std::map<std::string, std::unique_ptr<SweepRunner>> runners;  // one per options
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json reply;
    try {
      const nlohmann::json request = nlohmann::json::parse(line);
      const nlohmann::json& given = request.at("options");
      const std::string key = given.dump();
      if (!runners.count(key)) {
        RunnerOptions options;
        options.counters = false;  // this process never loads CUPTI
        options.cold_l2 = given.at("cold_l2").get<bool>();
        options.transfer = parse_transfer_mode(given.at("transfer").get<std::string>());
        options.pinned_host = given.at("pinned_host").get<bool>();
        runners[key] = std::make_unique<SweepRunner>(gpu, options);
      }
      const std::string window = request.value("window", "first");
      if (window != "first" && window != "revisit")
        throw std::runtime_error("unknown timing window '" + window + "'");
      const Point point = runners[key]->time_point(
          find_family(request.at("family").get<std::string>()), request.at("params"),
          window == "first" ? TimingWindow::first : TimingWindow::revisit);
      reply = {{"status", to_string(point.status)},
               {"reason", point.reason},
               {"algorithm", point.algorithm},
               {"timing", point.timing},
               {"details", point.details.value("timing", nlohmann::json::object())}};
    } catch (const std::exception& e) {
      reply = {{"status", "failed"}, {"reason", std::string("timing worker: ") + e.what()}};
    }
    out << reply.dump() << "\n" << std::flush;
  }
}

}  // namespace timeroof
