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

TEST(CliInterrupt, CtrlCStoresTheCurrentPointAndResumeFinishesTheRest) {
  TR_REQUIRE_GPU();
  TempDir dir;
  const std::string db = dir.file("t.db"), err_path = dir.file("err.txt");
  std::vector<std::string> args = sweep_args(db);
  args.insert(args.begin(), test::tool_binary());

  const pid_t child = fork();
  ASSERT_GE(child, 0);
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
