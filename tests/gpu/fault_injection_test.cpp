// GPU tier (#16): faults injected into real runs of the binary, as a user or a
// machine would cause them. kill -9 during a sweep's counter pass and during
// `ceilings`, and a point that cannot fit in GPU memory among small ones: each
// leaves the store readable with every finished point intact, and --resume
// finishes a killed sweep measuring only what is missing.
//
// The GPU taken by another process is tests/gpu/cli_busy_counters_test.cpp:
// three sweeps on one GPU, each waiting for the counters the others hold, or
// keeping its timing and ending `partial` saying why. It is not repeated here.
//
// The kills are timed by what the binary shows a user at a terminal: its
// progress line, printed only when stderr is one, so the tool runs with stderr
// on a pseudo-terminal. A sweep's line reads "hardware counters of N point(s)"
// while a counter collection runs (sweeps/runner.cpp); `ceilings` shows
// "[i/n] FAMILY roofs".
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/results.hpp"
#include "src/store/results_store.hpp"
#include "tests/gpu/gpu_test_support.hpp"
#include "tests/support/run_tool.hpp"

extern char** environ;

namespace timeroof {
namespace {

using Clock = std::chrono::steady_clock;
using test::run_tool;
using test::TempDir;

// Every command here is bounded, so a hang fails its test instead of using up
// the tier's 200 s for the whole binary.
constexpr int kToolLimitSeconds = 150;

// The binary with stdin and stdout on /dev/null and stderr on a pseudo-terminal.
class ToolOnTerminal {
 public:
  explicit ToolOnTerminal(const std::vector<std::string>& args) {
    master_ = posix_openpt(O_RDWR | O_NOCTTY);
    char name[128] = {};
    int terminal = -1;
    if (master_ < 0 || fcntl(master_, F_SETFD, FD_CLOEXEC) != 0 || grantpt(master_) != 0 ||
        unlockpt(master_) != 0 || ptsname_r(master_, name, sizeof name) != 0 ||
        (terminal = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
      const std::string why = std::strerror(errno);
      if (master_ >= 0) close(master_);
      throw std::runtime_error("no pseudo-terminal: " + why);
    }
    std::vector<std::string> words{test::tool_binary()};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, terminal, STDERR_FILENO);
    const int spawned = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(terminal);  // the child's copy is the terminal's only writer (and its children's)
    if (spawned != 0) {
      pid_ = -1;
      close(master_);
      throw std::runtime_error("cannot run " + words[0] + ": " + std::strerror(spawned));
    }
  }
  ~ToolOnTerminal() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }
  ToolOnTerminal(const ToolOnTerminal&) = delete;
  ToolOnTerminal& operator=(const ToolOnTerminal&) = delete;

  // Reads what it prints until `done(printed)` holds, it exits, or `seconds`
  // pass; whether `done` held.
  bool read_until(const std::function<bool(const std::string&)>& done, double seconds) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (!done(printed_)) {
      if (!running()) {
        while (read_some(0)) {
        }
        return done(printed_);
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      if (!read_some(static_cast<int>(std::min<long>(left, 100))))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // nothing, or hung up
    }
    return true;
  }

  bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
    pid_ = -1;
    return false;
  }

  // kill -9; whether that is what ended it (it was still running).
  bool kill9() {
    if (!running()) return false;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  }

  const std::string& printed() const { return printed_; }

 private:
  // One read of what is there within `wait_ms`; false when nothing came.
  bool read_some(int wait_ms) {
    pollfd fd{master_, POLLIN, 0};
    if (poll(&fd, 1, wait_ms) <= 0 || !(fd.revents & POLLIN)) return false;
    char buffer[4096];
    const ssize_t n = read(master_, buffer, sizeof buffer);
    if (n <= 0) return false;  // EIO: every writer has closed the terminal
    printed_.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  int master_ = -1;
  pid_t pid_ = -1;
  std::string printed_;
};

int occurrences(const std::string& text, const std::string& word) {
  int n = 0;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

// "N point(s) measured, M not ok, K already stored" from a sweep's summary line.
struct Summary {
  int measured = -1, not_ok = -1, already = -1;
};
Summary summary_of(const std::string& err) {
  std::smatch m;
  static const std::regex line(R"((\d+) point\(s\) measured, (\d+) not ok, (\d+) already stored)");
  if (!std::regex_search(err, m, line)) return {};
  return {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3])};
}

std::vector<RunRecord> stored_runs(const std::string& db) {
  ResultsStore store = ResultsStore::open(db, ResultsStore::Access::read_only);
  return store.load_all();
}

// What a stored point lacks to be a finished measurement (core/results.hpp):
// its times and trace, and its counters or the reason it has none; "" when
// nothing. Only ok and timing-only points count here: these sweeps' small
// points have no reason to fail.
std::string incomplete(const Point& p) {
  const std::string at = "point #" + std::to_string(p.seq) + " (" + to_string(p.status) + "): ";
  if (p.status != PointStatus::ok && p.status != PointStatus::counters_unavailable)
    return at + "not measured: " + p.reason;
  if (!p.timing.call || !p.timing.stream || !p.timing.issue) return at + "a time is missing";
  if (!p.timing.graph && p.timing.graph_unavailable.empty())
    return at + "no T_graph and no reason why";
  if (p.kernels.empty()) return at + "no kernels traced";
  const nlohmann::json counters = p.details.value("counters", nlohmann::json::object());
  if (p.status == PointStatus::ok) {
    if (p.counters.empty() || counters.value("collected", false) != true)
      return at + "ok without counters";
  } else if (p.reason.empty() || counters.value("collected", true) != false) {
    return at + "timing-only without saying why";
  }
  return "";
}

// Each seq of the run once, 0 .. count-1 when `count` is given.
void expect_each_seq_once(const RunRecord& run, std::optional<int> count = std::nullopt) {
  std::set<int> seqs;
  for (const Point& p : run.points) EXPECT_TRUE(seqs.insert(p.seq).second) << "seq " << p.seq;
  if (!count) return;
  EXPECT_EQ(static_cast<int>(seqs.size()), *count);
  if (!seqs.empty()) {
    EXPECT_EQ(*seqs.begin(), 0);
    EXPECT_EQ(*seqs.rbegin(), *count - 1);
  }
}

// The store opens for the read commands a user has after a crash.
void expect_readable(const std::string& db) {
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"runs", "--db", db, "--json"},
        std::vector<std::string>{"export", "--db", db},
        std::vector<std::string>{"analyze", "--db", db}}) {
    const test::ToolResult r = run_tool(command, {}, kToolLimitSeconds);
    EXPECT_EQ(r.exit_code, 0) << command[0] << ": " << r.err;
  }
}

// 32 conv2d points with counters: two full counter batches of 16 (the runner's
// counter_batch), seq i and i + 16 the same shape but for the filters. fp32 at
// batch 512 and up: GPU-bound (T_call ~2-4 ms on an H100, the issue time well under
// the 2% that makes a point host-bound), so each point takes one timing window and is
// written as soon as its batch's counters are in; a host-bound point would wait for
// its revisits (window_spacing_s later) and hold back the points after it. At batch
// 256 an H200's faster calls made some points host-bound: no point was written
// before the last collection.
constexpr int kCounterSweepPoints = 32;
constexpr int kCounterBatches = 2;
std::vector<std::string> counter_sweep_args(const std::string& db) {
  return {"sweep", "conv2d",      "--batch", "512..527", "--filters",
          "64,32", "--precision", "fp32",    "--db",     db};
}

TEST(FaultInjection, KillDuringTheCounterPassKeepsTheFinishedPointsAndResumeDoesTheRest) {
  TR_REQUIRE_GPU();
  const TempDir dir;
  const std::string db = dir.file("t.db");
  const std::string counting = "hardware counters of ";
  std::vector<Point> stored_before;  // what the store held when the kill came
  {
    ToolOnTerminal sweep(counter_sweep_args(db));
    // A later collection's line once the store holds points: those points are
    // finished (counters and windows), the batch now counted is not written.
    auto seen = Clock::now();
    for (int collection = 2; collection <= kCounterBatches && stored_before.empty(); ++collection) {
      const bool reached = sweep.read_until(
          [&](const std::string& printed) { return occurrences(printed, counting) >= collection; },
          120);
      seen = Clock::now();
      ASSERT_TRUE(reached) << "no counter collection " << collection
                           << " (counters unavailable?):\n"
                           << sweep.printed();
      std::vector<RunRecord> runs = stored_runs(db);
      ASSERT_EQ(runs.size(), 1u);
      stored_before = runs[0].points;
    }
    ASSERT_FALSE(stored_before.empty()) << "no point written before the last counter collection:\n"
                                        << sweep.printed();
    // Into the middle of the collection: half as long as the first one took.
    const double batch_s = stored_before[0]
                               .details.value("counters", nlohmann::json::object())
                               .value("batch_seconds", 0.4);
    const std::chrono::duration<double> into(std::clamp(batch_s / 2, 0.05, 2.0));
    std::this_thread::sleep_until(seen + std::chrono::duration_cast<Clock::duration>(into));
    ASSERT_TRUE(sweep.kill9()) << "the sweep ended before kill -9:\n" << sweep.printed();
    std::printf("kill -9 %.2f s into a later counter collection (the first took %.2f s)\n",
                std::chrono::duration<double>(Clock::now() - seen).count(), batch_s);
  }

  expect_readable(db);
  std::vector<RunRecord> runs = stored_runs(db);
  ASSERT_EQ(runs.size(), 1u);
  const RunRecord killed = runs[0];  // a copy: `runs` is read again after the resume
  // What a crash leaves: no one finished it, and its writer is gone (#16).
  EXPECT_EQ(killed.run.status, "interrupted");
  // Nothing of the batch whose counters were being collected: its points had
  // not been written (a crash loses the points waiting for their counters or
  // their host-side windows). What was stored stays.
  EXPECT_EQ(killed.points.size(), stored_before.size())
      << "the kill came after the collection: its points were written";
  expect_each_seq_once(killed);
  for (const Point& p : killed.points) EXPECT_EQ(incomplete(p), "");
  for (std::size_t i = 0; i < stored_before.size() && i < killed.points.size(); ++i)
    EXPECT_TRUE(killed.points[i] == stored_before[i])
        << "point #" << stored_before[i].seq << " changed";

  std::vector<std::string> resume = counter_sweep_args(db);
  resume.insert(resume.end(), {"--resume", std::to_string(killed.run.id)});
  const test::ToolResult rest = run_tool(resume, {}, kToolLimitSeconds);
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  const Summary summary = summary_of(rest.err);
  const int stored = static_cast<int>(killed.points.size());
  EXPECT_EQ(summary.already, stored) << rest.err;
  EXPECT_EQ(summary.measured, kCounterSweepPoints - stored) << rest.err;

  runs = stored_runs(db);
  ASSERT_EQ(runs.size(), 1u);
  const RunRecord& resumed = runs[0];
  EXPECT_EQ(resumed.run.status, "complete");
  ASSERT_EQ(resumed.points.size(), static_cast<std::size_t>(kCounterSweepPoints));
  expect_each_seq_once(resumed, kCounterSweepPoints);
  for (const Point& p : resumed.points) EXPECT_EQ(incomplete(p), "");
  // The points stored before the kill are the same rows, untouched.
  for (const Point& before : killed.points) {
    const auto after = std::find_if(resumed.points.begin(), resumed.points.end(),
                                    [&](const Point& p) { return p.seq == before.seq; });
    ASSERT_NE(after, resumed.points.end());
    EXPECT_TRUE(*after == before) << "point #" << before.seq << " was measured again";
  }
  std::printf("kill -9 in the counter pass after %d of %d points; --resume measured %d\n", stored,
              kCounterSweepPoints, summary.measured);
}

TEST(FaultInjection, KillDuringCeilingsLeavesTheStoreAndItsRunsIntact) {
  TR_REQUIRE_GPU();
  const TempDir dir;
  const std::string db = dir.file("t.db");
  const test::ToolResult sweep =
      run_tool({"sweep", "conv2d", "--batch", "1,2,4", "--precision", "fp16", "--db", db}, {},
               kToolLimitSeconds);
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  const std::vector<RunRecord> before = stored_runs(db);
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(before[0].points.size(), 3u);

  {
    // Killed in the middle: once the progress line has reached half the roof
    // families ("[3/6] memory roofs"), a moment into that family's kernels.
    ToolOnTerminal ceilings({"ceilings", "--quick", "--db", db});
    static const std::regex step(R"(\[(\d+)/(\d+)\] (\S+) roofs)");
    std::string family;
    const bool halfway = ceilings.read_until(
        [&](const std::string& printed) {
          for (auto it = std::sregex_iterator(printed.begin(), printed.end(), step);
               it != std::sregex_iterator(); ++it) {
            if (2 * std::stoi((*it)[1]) >= std::stoi((*it)[2])) {
              family = (*it)[3];
              return true;
            }
          }
          return false;
        },
        120);
    ASSERT_TRUE(halfway) << ceilings.printed();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_TRUE(ceilings.kill9()) << "ceilings ended before kill -9:\n" << ceilings.printed();
    std::printf("kill -9 during the %s roofs of `ceilings --quick`\n", family.c_str());
  }

  expect_readable(db);
  std::vector<RunRecord> runs = stored_runs(db);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[0] == before[0]) << "the sweep's run changed";
  EXPECT_EQ(runs[1].run.status, "interrupted");  // begun, never finished, writer gone
  EXPECT_TRUE(runs[1].run.machine.ceilings.empty()) << "roofs are stored together at the end";
  EXPECT_TRUE(runs[1].points.empty());

  const test::ToolResult again =
      run_tool({"ceilings", "--quick", "--db", db, "--json"}, {}, kToolLimitSeconds);
  // 3: a roof failed and the others are kept; the run still ends.
  ASSERT_TRUE(again.exit_code == 0 || again.exit_code == 3) << again.err;
  runs = stored_runs(db);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_TRUE(runs[0] == before[0]) << "the sweep's run changed";
  EXPECT_EQ(runs[1].run.status, "interrupted");
  EXPECT_EQ(runs[2].run.status, again.exit_code == 0 ? "complete" : "partial");
  EXPECT_FALSE(runs[2].run.machine.ceilings.empty());
  std::printf("ceilings --quick again: exit %d, %zu roofs\n", again.exit_code,
              runs[2].run.machine.ceilings.size());
}

TEST(FaultInjection, OutOfMemoryPointAmongSmallOnesIsStoredWithItsReasonAndTheSweepGoesOn) {
  TR_REQUIRE_GPU();
  const TempDir dir;
  const std::string db = dir.file("t.db");
  // Batch 262144 of the baseline conv (112x112x64 fp16 in): a 421 GB input,
  // beyond any GPU's memory (H100 80 GB, H200 141 GB). It comes while two small
  // points wait for their counters: they are collected and stored, the big one
  // tried again without them, and the sweep goes on.
  constexpr int kHuge = 262144;
  const std::vector<std::string> args = {
      "sweep",       "conv2d", "--batch", "1,2," + std::to_string(kHuge) + ",4",
      "--precision", "fp16",   "--db",    db};
  const test::ToolResult r = run_tool(args, {}, kToolLimitSeconds);
  // A point that cannot fit is a result: the run is complete.
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Summary summary = summary_of(r.err);
  EXPECT_EQ(summary.measured, 4) << r.err;
  EXPECT_EQ(summary.not_ok, 1) << r.err;

  expect_readable(db);
  const std::vector<RunRecord> runs = stored_runs(db);
  ASSERT_EQ(runs.size(), 1u);
  const RunRecord& run = runs[0];
  EXPECT_EQ(run.run.status, "complete");
  ASSERT_EQ(run.points.size(), 4u);
  expect_each_seq_once(run, 4);
  for (const Point& p : run.points) {
    if (p.params.value("batch", 0) != kHuge) {
      EXPECT_EQ(incomplete(p), "");
      continue;
    }
    EXPECT_EQ(p.seq, 2);
    EXPECT_EQ(p.status, PointStatus::out_of_memory) << p.reason;
    // The reason says what did not fit, in numbers.
    EXPECT_NE(p.reason.find("cudaErrorMemoryAllocation"), std::string::npos) << p.reason;
    EXPECT_NE(p.reason.find("GiB"), std::string::npos) << p.reason;
    EXPECT_FALSE(p.timing.call.has_value());
    std::printf("batch %d: %s: %s\n", kHuge, to_string(p.status), p.reason.c_str());
  }

  // Finished, the out-of-memory point included: nothing to resume, nothing changed.
  std::vector<std::string> resume = args;
  resume.insert(resume.end(), {"--resume", std::to_string(run.run.id)});
  const test::ToolResult again = run_tool(resume, {}, kToolLimitSeconds);
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_NE(again.err.find("nothing to resume"), std::string::npos) << again.err;
  const std::vector<RunRecord> after = stored_runs(db);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_TRUE(after[0] == run) << "a refused --resume changed the store";
}

}  // namespace
}  // namespace timeroof
