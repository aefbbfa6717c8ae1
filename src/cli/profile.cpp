// `timeroof profile [--db PATH] [--name NAME] -- CMD ARGS...` (issue 17): runs CMD
// with libtimeroof_inject.so loaded through CUDA_INJECTION64_PATH and stores
// what it traces (core/trace_events.hpp) as the program runs.
//
// The parent never touches a GPU beyond naming it (identify_gpu: no context):
// the program owns its GPUs. It creates the run first (status running), so a
// crash of anything leaves a visible run; then it reads the journals the
// injection library appends (profile_journal.hpp) every half second and writes
// each batch in one transaction. The program's stdin, stdout, stderr and exit
// code are its own; `timeroof profile` exits with the program's code (128 + the
// signal when a signal ended it).
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/api_tracing.hpp"
#include "core/error.hpp"
#include "core/kernel_selection.hpp"
#include "core/vocabulary.hpp"
#include "src/cli/command_options.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/profile_journal.hpp"
#include "src/cli/stored_runs.hpp"
#include "src/store/results_store.hpp"
#include "sweeps/spec.hpp"

extern char** environ;

namespace timeroof::cli {

// Where libcupti.so is (src/cli/profile_cupti_*.cpp): NVTX reaches CUPTI only when
// the program runs with NVTX_INJECTION64_PATH naming it. Empty without CUDA.
std::string cupti_library_path();

namespace {

constexpr int kJournalFormat = 1;
constexpr auto kIngestPeriod = std::chrono::milliseconds(500);
constexpr auto kExitPoll = std::chrono::milliseconds(20);

// ---- Finding what to run ----

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// CMD as execvp would find it, so "not found" is said before a run is stored.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (is_executable_file(name)) return name;
  } else {
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    std::size_t begin = 0;
    while (begin <= dirs.size()) {
      std::size_t end = dirs.find(':', begin);
      if (end == std::string::npos) end = dirs.size();
      const std::string dir = end > begin ? dirs.substr(begin, end - begin) : ".";
      if (is_executable_file(dir + "/" + name)) return dir + "/" + name;
      begin = end + 1;
    }
  }
  throw usage_error(
      "cannot run '" + name + "': " +
      (name.find('/') != std::string::npos ? "no such executable file" : "not found on PATH") +
      "; give the program's path, e.g. timeroof profile -- ./my_app");
}

std::string directory_of_this_binary() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string(".") : self.parent_path().string();
}

// TIMEROOF_INJECT_LIBRARY, else beside the binary (the build tree), else the
// install layout (${bindir}/timeroof -> ${libdir}/timeroof/).
std::string find_inject_library() {
  if (const char* given = std::getenv("TIMEROOF_INJECT_LIBRARY"); given && *given) {
    if (::access(given, R_OK) != 0)
      throw usage_error(std::string("TIMEROOF_INJECT_LIBRARY=") + given +
                        " is not a readable file; point it at libtimeroof_inject.so or unset it");
    return std::filesystem::absolute(given).string();
  }
  const std::string bin = directory_of_this_binary();
  const std::vector<std::string> candidates = {
      bin + "/libtimeroof_inject.so",
      bin + "/../" TIMEROOF_INSTALL_LIBDIR "/timeroof/libtimeroof_inject.so"};
  for (const std::string& candidate : candidates)
    if (::access(candidate.c_str(), R_OK) == 0)
      return std::filesystem::weakly_canonical(candidate).string();
  throw environment_error("cannot find libtimeroof_inject.so (looked in " + candidates[0] +
                          " and " + candidates[1] +
                          "); build the timeroof_inject target or set TIMEROOF_INJECT_LIBRARY");
}

// ---- The journal directory and the child process ----

// A fresh directory for the journals, removed with this object.
class TempDirectory {
 public:
  TempDirectory() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/timeroof-profile-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      throw environment_error("cannot create a directory for the trace journals (" + pattern +
                              ": " + std::strerror(errno) + "); set TMPDIR to a writable one");
    path_ = pattern;
  }
  ~TempDirectory() {
    if (keep_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;
  const std::string& path() const noexcept { return path_; }
  // The journals are the only copy of what was not stored: keep them.
  void keep() noexcept { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

// The pid SIGINT/SIGTERM are forwarded to; read by the signal handler.
volatile sig_atomic_t g_forward_to = 0;

// A signal sent to `timeroof profile` alone (kill, a batch system) goes on to
// the program; one from the terminal has reached the program's process group
// already, and twice would be a second Ctrl-C.
void forward_signal(int signal, siginfo_t* info, void*) {
  const pid_t child = g_forward_to;
  if (child > 0 && info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE))
    ::kill(child, signal);
}

// SIGINT and SIGTERM forwarded while this object lives; the old handlers after.
class SignalForwarding {
 public:
  SignalForwarding() {
    struct sigaction action {};
    action.sa_sigaction = forward_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  ~SignalForwarding() {
    g_forward_to = 0;
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// How the program ended.
struct ExitStatus {
  int code = 0;    // exit code, or 128 + signal
  int signal = 0;  // 0: it exited
};

// The running program; killed and reaped if this object goes before it ended
// (an error in timeroof, never a normal path).
class ChildProcess {
 public:
  // Forks and execs `program` with `argv` and `environment`. An exec that fails
  // (between find_program and here the file changed) is a usage error.
  ChildProcess(const std::string& program, const std::vector<std::string>& argv,
               const std::vector<std::string>& environment) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> env;
    for (const std::string& e : environment) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);
    int exec_error[2];
    if (::pipe2(exec_error, O_CLOEXEC) != 0)
      throw environment_error(std::string("cannot create a pipe: ") + std::strerror(errno));
    std::fflush(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) {
      ::close(exec_error[0]);
      ::close(exec_error[1]);
      throw environment_error(std::string("cannot start the program: fork: ") +
                              std::strerror(errno));
    }
    if (pid_ == 0) {  // the child: only async-signal-safe calls until exec
      ::close(exec_error[0]);
      ::execve(program.c_str(), args.data(), env.data());
      const int error = errno;
      [[maybe_unused]] const ssize_t n = ::write(exec_error[1], &error, sizeof error);
      ::_exit(127);
    }
    ::close(exec_error[1]);
    int error = 0;
    ssize_t n;
    do {
      n = ::read(exec_error[0], &error, sizeof error);  // EOF: exec succeeded
    } while (n < 0 && errno == EINTR);
    ::close(exec_error[0]);
    if (n == static_cast<ssize_t>(sizeof error)) {
      wait();
      throw usage_error("cannot run '" + program + "': " + std::strerror(error) +
                        "; give an executable program after --");
    }
  }
  ~ChildProcess() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }

  // The exit status once the program has ended; empty while it runs.
  std::optional<ExitStatus> poll() {
    if (!status_) reap(WNOHANG);
    return status_;
  }
  ExitStatus wait() {
    while (!status_) reap(0);
    return *status_;
  }

 private:
  void reap(int flags) {
    int raw = 0;
    const pid_t done = ::waitpid(pid_, &raw, flags);
    if (done == 0 || (done < 0 && errno == EINTR)) return;
    if (done < 0) {  // not our child any more: treat as ended
      status_ = ExitStatus{127, 0};
      return;
    }
    if (WIFEXITED(raw)) status_ = ExitStatus{WEXITSTATUS(raw), 0};
    if (WIFSIGNALED(raw)) status_ = ExitStatus{128 + WTERMSIG(raw), WTERMSIG(raw)};
  }

  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
};

// ---- The run ----

// The environment variables that change what a CUDA program does, recorded
// with the run where set (the three timeroof sets are always there).
constexpr const char* kRecordedEnvironment[] = {"CUDA_VISIBLE_DEVICES",
                                                "CUDA_LAUNCH_BLOCKING",
                                                "CUDA_DEVICE_MAX_CONNECTIONS",
                                                "CUDA_MODULE_LOADING",
                                                "CUBLAS_WORKSPACE_CONFIG",
                                                "PYTORCH_CUDA_ALLOC_CONF",
                                                "OMP_NUM_THREADS",
                                                "NCCL_DEBUG"};

std::vector<std::string> child_environment(const std::map<std::string, std::string>& ours) {
  std::vector<std::string> environment;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    if (!ours.count(name)) environment.push_back(text);
  }
  for (const auto& [name, value] : ours) environment.push_back(name + "=" + value);
  return environment;
}

// Counts by kind, for the closing line.
std::string describe_counts(const std::map<TraceKind, std::uint64_t>& counts) {
  std::string text;
  for (const auto& [kind, count] : counts)
    text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + to_string(kind);
  return text;
}

struct ProfileArguments {
  std::string name;
  std::vector<std::string> command;
  bool separator_given = false;
  KernelSelectionOptions counters;
  bool no_counters = false;
  std::string metrics;                              // --metrics as given
  std::string api = to_string(kDefaultApiTracing);  // --api as given
};

// What the counters were asked to measure, as the run's spec keeps it.
nlohmann::json counters_json(const KernelSelectionOptions& c) {
  if (!c.enabled) return {{"enabled", false}};
  nlohmann::json asked = {{"enabled", true},     {"kernels", c.kernels}, {"nvtx", c.nvtx},
                          {"skip", c.skip},      {"count", c.count},     {"every", c.every},
                          {"metrics", c.metrics}};
  if (!c.iteration_range.empty()) asked["iteration_range"] = c.iteration_range;
  return asked;
}

ExitCode run_profile(const CommonOptions& options, const ProfileArguments& args) {
  if (!args.separator_given || args.command.empty())
    throw usage_error(
        "profile needs the program after --, e.g. timeroof profile -- ./my_app --iterations 10");
  KernelSelectionOptions counters = args.counters;
  counters.enabled = !args.no_counters;
  if (!args.metrics.empty()) counters.metrics = parse_metric_list(args.metrics, "--metrics");
  if (const auto problem = selection_problem(counters)) throw usage_error(*problem);
  const ApiTracing api = parse_api_tracing(args.api);
  if (api == ApiTracing::none && counters.enabled)
    throw usage_error(
        "--api none leaves kernel counters nothing to tie them to their kernels (the launch "
        "calls are not traced); give --api launches (the default) or --no-counters");
  const std::string program = find_program(args.command.front());
  const std::string inject_library = find_inject_library();

  const GpuAvailability available = find_gpus();
  std::vector<GpuInfo> gpus;
  // With clocks and the driver's versions, but no context: the program's GPUs stay its own.
  for (int d = 0; d < available.count; ++d) gpus.push_back(observe_gpu(d));

  TempDirectory journals;
  std::map<std::string, std::string> ours = {{"CUDA_INJECTION64_PATH", inject_library},
                                             {"TIMEROOF_PROFILE_DIR", journals.path()}};
  if (const std::string cupti = cupti_library_path(); !cupti.empty())
    ours["NVTX_INJECTION64_PATH"] = cupti;
  for (const auto& [name, value] : selection_environment(counters)) ours[name] = value;
  ours[kApiVariable] = to_string(api);
  nlohmann::json environment = nlohmann::json::object();
  for (const char* name : kRecordedEnvironment)
    if (const char* value = std::getenv(name)) environment[name] = value;
  for (const auto& [name, value] : ours) environment[name] = value;

  Run run = new_run(options.command_line);
  if (!gpus.empty()) run.machine.gpu = gpus.front();
  nlohmann::json profile = {{"command", args.command},
                            {"environment", environment},
                            {"journal_format", kJournalFormat},
                            {"gpus", devices_json(gpus)},
                            {"counters", counters_json(counters)},
                            {"api", to_string(api)}};
  if (!args.name.empty()) profile["name"] = args.name;
  if (available.count == 0) profile["no_gpu"] = available.why_none;
  run.spec = {{"profile", profile}};

  ResultsStore store = ResultsStore::open(options.db, ResultsStore::Access::read_write);
  store.begin_run(run);

  JournalReader reader(journals.path());
  std::map<TraceKind, std::uint64_t> counts;
  std::uint64_t stored = 0;
  auto ingest = [&](bool final) {
    const std::vector<TraceEvent> events = reader.read_new(final);
    if (events.empty()) return;
    store.append_trace_events(run.id, events);
    for (const TraceEvent& e : events) ++counts[e.kind];
    stored += events.size();
  };

  ExitStatus status;
  std::exception_ptr store_failure;
  {
    SignalForwarding forwarding;
    ChildProcess child(program, args.command, child_environment(ours));
    g_forward_to = child.pid();
    auto last_ingest = std::chrono::steady_clock::now();
    while (!child.poll()) {
      std::this_thread::sleep_for(kExitPoll);
      if (store_failure || std::chrono::steady_clock::now() - last_ingest < kIngestPeriod) continue;
      last_ingest = std::chrono::steady_clock::now();
      // A store that fails stops the storing, never the program.
      try {
        ingest(false);
      } catch (...) {
        store_failure = std::current_exception();
      }
    }
    status = *child.poll();
  }
  if (!store_failure) {
    try {
      ingest(true);
    } catch (...) {
      store_failure = std::current_exception();
    }
  }

  run.spec["profile"]["exit"] =
      status.signal
          ? nlohmann::json{{"code", status.code},
                           {"signal", status.signal},
                           {"signal_name",
                            sigabbrev_np(status.signal) ? sigabbrev_np(status.signal) : "?"}}
          : nlohmann::json{{"code", status.code}};
  const LoadedLibraries loaded = read_loaded_libraries(journals.path());
  run.spec["profile"]["libraries"] = loaded.libraries;
  run.spec["profile"]["records"] = stored;
  run.spec["profile"]["processes"] = reader.journals();
  run.spec["profile"]["skipped_lines"] = reader.bad_lines() + reader.truncated_lines();
  run.status =
      to_string(status.code == 0 && !store_failure ? RunStatus::complete : RunStatus::failed);
  run.finished_at = utc_now_iso8601();
  if (store_failure) {
    journals.keep();
    std::fprintf(stderr, "timeroof: the trace journals stay in %s\n", journals.path().c_str());
    try {
      store.update_run(run);
    } catch (...) {
    }
    std::rethrow_exception(store_failure);
  }
  store.update_run(run);

  if (const std::string problems = reader.problems_summary(); !problems.empty())
    std::fprintf(stderr, "timeroof: %s\n", problems.c_str());
  for (const std::string& problem : loaded.problems)
    std::fprintf(stderr, "timeroof: %s\n", problem.c_str());
  const std::string ended = status.signal ? "was killed by signal " + std::to_string(status.signal)
                                          : "exited with " + std::to_string(status.code);
  if (stored == 0) {
    std::fprintf(stderr,
                 "timeroof: %s recorded no CUDA activity (it %s); run %lld in %s holds no trace\n",
                 args.command.front().c_str(), ended.c_str(), static_cast<long long>(run.id),
                 options.db.c_str());
  } else {
    std::fprintf(stderr,
                 "timeroof: run %lld in %s: %llu records (%s) from %zu process(es); the "
                 "program %s\n",
                 static_cast<long long>(run.id), options.db.c_str(),
                 static_cast<unsigned long long>(stored), describe_counts(counts).c_str(),
                 reader.journals(), ended.c_str());
  }
  return static_cast<ExitCode>(status.code);
}

}  // namespace

void register_profile(CLI::App& app, CommonOptions& options, Action& action) {
  auto args = std::make_shared<ProfileArguments>();
  CLI::App* command = app.add_subcommand(
      "profile", "Trace any CUDA program (kernels, copies, API calls, NVTX ranges) into the store");
  add_db(*command, options);
  command->add_option("--name", args->name, "a name for the run, kept in its spec");
  command
      ->add_option("--api", args->api,
                   "which CUDA API calls to trace: none, launches, runtime, driver or all "
                   "(below)")
      ->capture_default_str();
  CLI::Option* no_counters = command->add_flag("--no-counters", args->no_counters,
                                               "trace only: measure no kernel's hardware counters");
  // Each selection option contradicts --no-counters: a one-line error, not a silent drop.
  const std::vector<CLI::Option*> selection = {
      command->add_option("--kernels", args->counters.kernels,
                          "measure only kernels whose demangled name matches this regex"),
      command->add_option("--nvtx", args->counters.nvtx,
                          "measure only kernels launched inside an NVTX range matching this regex"),
      command->add_option(
          "--skip", args->counters.skip,
          "pass over this many matching launches (with --iteration-range: instances of "
          "the range) before measuring (warm-up)"),
      command->add_option("--count", args->counters.count, "measure at most this many launches")
          ->capture_default_str(),
      command->add_flag("--every", args->counters.every,
                        "measure every matching launch, not only the first of each kernel "
                        "configuration (name, grid, block) in each innermost NVTX range"),
      command->add_option("--metrics", args->metrics,
                          "extra CUPTI metrics to collect per measured kernel (comma-separated)")};
  for (CLI::Option* option : selection) no_counters->excludes(option);
  CLI::Option* iteration_range = command->add_option(
      "--iteration-range", args->counters.iteration_range,
      "measure every kernel of one instance of the NVTX range matching this regex (a loop's "
      "iteration), the counter passes taken over its next instances: no kernel replay "
      "(below)");
  no_counters->excludes(iteration_range);
  for (const char* option : {"--kernels", "--nvtx", "--count", "--every"})
    iteration_range->excludes(option);
  command->add_option("command", args->command, "the program and its arguments, after --");
  command->footer(
      "Examples:\n"
      "  timeroof profile -- ./my_app --iterations 10\n"
      "  timeroof profile --db traces.db --name resnet50 -- python3 train.py\n\n"
      "Runs the program with libtimeroof_inject.so (CUDA_INJECTION64_PATH) and stores every\n"
      "kernel, memcpy, memset and NVTX range, and the CUDA API calls --api names, as it\n"
      "runs, so a program that crashes or is killed keeps what was recorded. Its\n"
      "output and exit code pass through: timeroof profile exits with the program's code\n"
      "(128 + the signal if one ended it); the run is complete on exit 0, else failed.\n\n"
      "Kernel counters: CUPTI replays each measured launch once per counter pass (the\n"
      "launch is serialized and takes longer; nothing else of the program changes). By\n"
      "default the first launch of each kernel configuration (name, grid, block) in each\n"
      "innermost NVTX range is measured, up to --count launches; --kernels, --nvtx and --skip "
      "narrow that, --every\n"
      "measures repeats too. Kernels inside CUDA graphs are traced, not measured.\n\n"
      "Iteration replay (--iteration-range REGEX): every kernel launched inside one instance\n"
      "of the range (e.g. a training step) is measured, each of CUPTI's counter passes on\n"
      "the next instance (--skip N passes over N first), so nothing runs twice and no memory\n"
      "is saved or restored: far cheaper than kernel replay. The instances must launch the\n"
      "same kernels in the same order (checked; a mismatch gives no counters) and run on\n"
      "one CUDA context; each launch of the last traced instance gets its kernel's counts,\n"
      "the loop's own, with the caches each kernel's predecessor left (compare DRAM\n"
      "bytes with ncu --replay-mode application, not with kernel replay).\n\n"
      "API calls (--api): each traced call is a record and costs host time; a framework\n"
      "makes many per kernel (PyTorch ~13 runtime calls, each with driver calls under it).\n"
      "  launches  (default) the runtime and driver calls that launch kernels and graphs,\n"
      "            copy, set memory or wait for the GPU (synchronize): all the analysis\n"
      "            needs (GPU work tied to its thread and NVTX range, host gaps, the\n"
      "            Perfetto host track). A range's API time counts these calls only.\n"
      "  runtime   every runtime call too (cudaGetDevice, cudaStreamIsCapturing, ...), and\n"
      "            CUPTI's synchronization records (as driver and all)\n"
      "  driver    every driver call too (those a runtime call makes included)\n"
      "  all       every runtime and driver call (a PyTorch ResNet-50 iteration: ~5,000\n"
      "            records against launches' ~900; costs in docs/design.md)\n"
      "  none      no API call: cheapest, but GPU work is tied to no thread or range, no\n"
      "            API time, no kernel counters (they are tied to kernels by their launch)\n"
      "TIMEROOF_INJECT_LIBRARY overrides where the injection library is found.");
  when_chosen(*command, action, [&options, args, command] {
    // `--` reaches CLI11's list of what it did not take; without it the
    // program's own flags would be read as ours.
    const std::vector<std::string> rest = command->remaining();
    args->separator_given = std::find(rest.begin(), rest.end(), "--") != rest.end();
    return run_profile(options, *args);
  });
}

}  // namespace timeroof::cli
