// src/cli/devices.hpp on the CPU: the --devices list, and the worker machinery
// (one process per GPU, a job on stdin, JSON lines back, interrupt, exit codes)
// driven with a stand-in worker script.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "src/cli/devices.hpp"
#include "tests/support/run_tool.hpp"
#include "tests/support/usage_errors.hpp"

namespace timeroof::cli {
namespace {

// The message of the usage error parse_devices gives for `text`.
std::string usage_message(const std::string& text, int gpus, bool counters) {
  return test::usage_message([&] { parse_devices(text, gpus, counters); });
}

TEST(ParseDevices, AllAndListsGiveTheIndices) {
  EXPECT_EQ(parse_devices("all", 4, true), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_devices("0,2", 4, true), (std::vector<int>{0, 2}));
  EXPECT_EQ(parse_devices("3", 4, true), (std::vector<int>{3}));
  EXPECT_EQ(parse_devices("0,0", 1, false), (std::vector<int>{0, 0}));  // timing only
}

TEST(ParseDevices, BadListsAreUsageErrorsNamingTheEntryAndTheGpus) {
  EXPECT_NE(usage_message("0,4", 4, true).find("no GPU 4 (this machine has 4 GPU(s), 0..3)"),
            std::string::npos);
  EXPECT_NE(usage_message("0,,1", 4, true).find("'' is not a GPU index"), std::string::npos);
  EXPECT_NE(usage_message("-1", 4, true).find("'-1' is not a GPU index"), std::string::npos);
  EXPECT_NE(usage_message("gpu0", 4, true).find("'gpu0'"), std::string::npos);
  EXPECT_NE(usage_message("99999999999", 4, true).find("not a GPU index"), std::string::npos);
  EXPECT_NE(usage_message("1,1", 4, true).find("named twice"), std::string::npos);
  EXPECT_NE(usage_message("1,1", 4, true).find("--no-counters"), std::string::npos);
  EXPECT_NE(usage_message("all", 0, true).find("no GPU here"), std::string::npos);
}

// A stand-in for `timeroof device-worker --device N`: echoes its device and job,
// prints one line that is not JSON, then exits with the code the job names, or
// waits for SIGINT and exits 3 as a real worker does.
class StandInWorker {
 public:
  StandInWorker() : path_(dir_.file("worker.sh")) {
    std::ofstream(path_) << "#!/bin/sh\n"
                            "read job\n"
                            "echo \"{\\\"device\\\": $3, \\\"job\\\": $job}\"\n"
                            "echo 'a library talking on stdout'\n"
                            "case \"$job\" in *wait*) trap 'echo \"{\\\"stopped\\\": $3}\"; "
                            "exit 3' INT; while true; do sleep 0.05; done;; esac\n"
                            "case \"$job\" in *fail*) exit 2;; esac\n"
                            "exit 0\n";
    chmod(path_.c_str(), 0755);
  }
  const std::string& path() const { return path_; }

 private:
  test::TempDir dir_;
  std::string path_;
};

TEST(RunWorkers, EachWorkerGetsItsJobAndEveryLineComesBackWithItsExitCode) {
  const StandInWorker worker;
  std::map<int, nlohmann::json> lines;
  const std::vector<int> codes = run_workers(
      worker.path(), {0, 1, 1}, {{{"n", 10}}, {{"n", 11}}, {{"n", 12}, {"fail", true}}},
      [&](int w, const nlohmann::json& line) { lines[w] = line; }, nullptr);
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 2}));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["device"], 0);
  EXPECT_EQ(lines[0]["job"]["n"], 10);
  EXPECT_EQ(lines[1]["device"], 1);
  EXPECT_EQ(lines[1]["job"]["n"], 11);
  EXPECT_EQ(lines[2]["job"]["n"], 12);
}

TEST(RunWorkers, StopInterruptsEveryWorkerWhichThenFinishesAndExitsThree) {
  const StandInWorker worker;
  const auto started = std::chrono::steady_clock::now();
  int stopped = 0;
  const std::vector<int> codes = run_workers(
      worker.path(), {0, 1}, {{{"wait", true}}, {{"wait", true}}},
      [&](int, const nlohmann::json& line) { stopped += line.contains("stopped"); },
      [&] { return std::chrono::steady_clock::now() - started > std::chrono::milliseconds(300); });
  EXPECT_EQ(codes, (std::vector<int>{3, 3}));
  EXPECT_EQ(stopped, 2) << "each worker's last line arrives after the interrupt";
}

// A stand-in worker that asks for more after its job and after every answer,
// echoing each answer, until its input ends. It ignores SIGINT, so only the end
// of its input can end it.
class AskingWorker {
 public:
  AskingWorker() : path_(dir_.file("asking.sh")) {
    std::ofstream(path_) << "#!/bin/sh\n"
                            "trap '' INT\n"
                            "read job\n"
                            "echo \"{\\\"job\\\": $job}\"\n"
                            "while echo '{\"more\": true}' && read next; do\n"
                            "  echo \"{\\\"got\\\": $next}\"\n"
                            "done\n"
                            "echo '{\"done\": true}'\n";
    chmod(path_.c_str(), 0755);
  }
  const std::string& path() const { return path_; }

 private:
  test::TempDir dir_;
  std::string path_;
};

TEST(ConverseWithWorkers, EachAnswerReachesItsWorkerAndEndingTheInputEndsIt) {
  const AskingWorker worker;
  std::map<int, std::vector<int>> got;
  std::map<int, int> done;
  int handed = 0;  // five items in all, to whoever asks first
  const std::vector<int> codes = converse_with_workers(
      worker.path(), {0, 1}, {{{"n", 0}}, {{"n", 1}}},
      [&](int w, const nlohmann::json& line) -> WorkerReply {
        if (line.contains("got")) got[w].push_back(line["got"]["item"].get<int>());
        if (line.contains("done")) ++done[w];
        if (!line.contains("more")) return {};
        if (handed == 5) return {.end_input = true};
        return {.line = nlohmann::json{{"item", handed++}}};
      },
      nullptr);
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
  std::vector<int> all = got[0];
  all.insert(all.end(), got[1].begin(), got[1].end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int>{0, 1, 2, 3, 4})) << "every answer arrives once";
  EXPECT_EQ(done[0], 1);
  EXPECT_EQ(done[1], 1);
}

TEST(ConverseWithWorkers, StopEndsTheInputOfAWorkerWaitingForAnAnswer) {
  const AskingWorker worker;
  const auto started = std::chrono::steady_clock::now();
  int done = 0;
  const std::vector<int> codes = converse_with_workers(
      worker.path(), {0}, {{{"n", 0}}},
      [&](int, const nlohmann::json& line) -> WorkerReply {
        done += line.contains("done");
        return {};  // never answers: only the stop can end the worker's wait
      },
      [&] { return std::chrono::steady_clock::now() - started > std::chrono::milliseconds(200); });
  EXPECT_EQ(done, 1);
  EXPECT_EQ(codes, (std::vector<int>{0}));
}

TEST(RunWorkers, AMissingExecutableIsAnEnvironmentError) {
  try {
    run_workers(
        "/nonexistent/timeroof", {0}, {{}}, [](int, const nlohmann::json&) {}, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ExitCode::environment);
    EXPECT_NE(std::string(error.what()).find("GPU 0's worker"), std::string::npos);
  }
}

}  // namespace
}  // namespace timeroof::cli
