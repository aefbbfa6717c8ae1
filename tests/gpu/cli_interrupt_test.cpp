// GPU tier: Ctrl-C during `timeroof sweep` finishes the current point, stores it
// and exits 3; `--resume` then measures only the points not yet stored. Run as a
// user would: the real binary, a real SIGINT.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/gpu/gpu_test_support.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

using namespace std::chrono_literals;
using test::read_file;
using test::run_tool;
using test::TempDir;

// 33 points (11 batches x 3 directions) with counters: long enough that Ctrl-C
// 1.5 s in lands mid-sweep (18 smaller points once ended within 3 s without
// counters; batched counters now cost little more).
constexpr int kPoints = 33;
std::vector<std::string> sweep_args(const std::string& db) {
  return {"sweep",       "conv2d",
          "--batch",     "1..1024:x2",
          "--direction", "fwd,bwd_data,bwd_filter",
          "--precision", "fp16",
          "--db",        db};
}

// "N point(s) measured, M not ok, K already stored" from the sweep's last line.
struct Summary {
  int measured = -1, already = -1;
};
Summary summary_of(const std::string& err) {
  std::smatch m;
  static const std::regex line(R"((\d+) point\(s\) measured, \d+ not ok, (\d+) already stored)");
  if (!std::regex_search(err, m, line)) return {};
  return {std::stoi(m[1]), std::stoi(m[2])};
}

long file_size(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_size) : -1;
}

// Starts the binary with `args`, stdout to /dev/null, stderr into err_path.
pid_t start_tool(std::vector<std::string> args, const std::string& err_path) {
  args.insert(args.begin(), test::tool_binary());
  const pid_t child = fork();
  if (child == 0) {
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err, STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return child;
}

int exit_code_of(pid_t child) {
  int status = 0;
  if (waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string run_status(const std::string& db) {
  const test::ToolResult runs = run_tool({"runs", "--db", db, "--json"});
  if (runs.exit_code != 0) return "runs: " + runs.err;
  const nlohmann::json listed = nlohmann::json::parse(runs.out, nullptr, false);
  return listed.is_array() && listed.size() == 1 ? listed[0].value("status", "") : runs.out;
}

// One writer per run (#16): a resume racing the run's first process, and a
// second resume while the first measures, are refused at once (exit 1, one line
// naming the run and the process); the writer they raced completes.
TEST(CliInterrupt, ASecondWriterOfARunIsRefusedAndTheFirstCompletes) {
  TR_REQUIRE_GPU();
  TempDir dir;
  const std::string db = dir.file("t.db");
  std::vector<std::string> resume = sweep_args(db);
  resume.insert(resume.end(), {"--resume", "1"});

  const pid_t first = start_tool(sweep_args(db), dir.file("first.txt"));
  // The store exists before the run does (the GPU is inspected in between): race
  // the run once it is listed, not once the file is there.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (run_status(db) != "running" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(run_status(db), "running") << read_file(dir.file("first.txt"));
  const auto racing_started = std::chrono::steady_clock::now();
  const test::ToolResult racing = run_tool(resume);
  const double racing_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - racing_started).count();
  EXPECT_EQ(racing.exit_code, 1) << racing.err;
  EXPECT_NE(racing.err.find("run 1 is being written by timeroof pid " + std::to_string(first)),
            std::string::npos)
      << racing.err;
  EXPECT_EQ(test::count_lines(racing.err), 1) << racing.err;
  ASSERT_EQ(kill(first, SIGINT), 0);
  const int first_code = exit_code_of(first);
  ASSERT_EQ(first_code, 3) << read_file(dir.file("first.txt"));
  EXPECT_EQ(run_status(db), "partial");

  const pid_t second = start_tool(resume, dir.file("second.txt"));
  // Claimed: the run reads as running again, under the second process.
  while (run_status(db) != "running" && std::chrono::steady_clock::now() < deadline + 60s)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const test::ToolResult third = run_tool(resume);
  EXPECT_EQ(third.exit_code, 1) << third.err;
  EXPECT_NE(third.err.find("run 1 is being written by timeroof pid " + std::to_string(second)),
            std::string::npos)
      << third.err;
  const int second_code = exit_code_of(second);
  const std::string second_err = read_file(dir.file("second.txt"));
  ASSERT_EQ(second_code, 0) << second_err;
  const Summary rest = summary_of(second_err);
  EXPECT_EQ(rest.measured + rest.already, kPoints) << second_err;
  EXPECT_EQ(run_status(db), "complete");
  std::printf(
      "a resume racing the first writer was refused in %.2f s; the second resume "
      "refused a third and measured %d points\n",
      racing_s, rest.measured);
}

TEST(CliInterrupt, CtrlCStoresTheCurrentPointAndResumeFinishesTheRest) {
  TR_REQUIRE_GPU();
  TempDir dir;
  const std::string db = dir.file("t.db"), err_path = dir.file("err.txt");
  const pid_t child = start_tool(sweep_args(db), err_path);
  ASSERT_GE(child, 0);
  // The store exists once the run is recorded (the handler is installed before
  // the first point); then let a few points finish before Ctrl-C.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (file_size(db) <= 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(kill(child, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const std::string first_err = read_file(err_path);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << "\n" << first_err;
  EXPECT_EQ(WEXITSTATUS(status), 3) << first_err;
  const Summary first = summary_of(first_err);
  ASSERT_GT(first.measured, 0) << first_err;
  ASSERT_LT(first.measured, kPoints) << "the sweep ended before Ctrl-C: make it longer\n"
                                     << first_err;
  EXPECT_NE(first_err.find("interrupted: resume with --resume"), std::string::npos) << first_err;

  const test::ToolResult runs = run_tool({"runs", "--db", db, "--json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  const nlohmann::json listed = nlohmann::json::parse(runs.out);
  ASSERT_TRUE(listed.is_array() && listed.size() == 1) << runs.out;
  EXPECT_EQ(listed[0]["status"], "partial") << runs.out;
  const std::string id = std::to_string(listed[0]["id"].get<long>());

  std::vector<std::string> resume = sweep_args(db);
  resume.insert(resume.end(), {"--resume", id});
  const test::ToolResult second = run_tool(resume);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const Summary rest = summary_of(second.err);
  EXPECT_EQ(rest.already, first.measured) << second.err;
  EXPECT_EQ(rest.measured + rest.already, kPoints) << second.err;
  std::printf("Ctrl-C after %d of %d points (exit 3); --resume measured the other %d\n",
              first.measured, kPoints, rest.measured);
}

}  // namespace
}  // namespace timeroof
