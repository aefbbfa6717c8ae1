// src/cli/devices.hpp on the CPU: the --devices list, and the worker machinery
// (one process per GPU, a job on stdin, JSON lines back, interrupt, exit codes)
// driven with a stand-in worker script.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
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

// A stand-in for a pooled worker: jobs until its input ends, each answered with
// its pid and the job, then {"more"} until the parent answers {"end"}, then
// {"done"}. A job naming "fail" makes it exit 2 without {"done"}. It ignores
// SIGINT, so only the end of its input ends a job the parent stops.
class PooledWorker {
 public:
  PooledWorker() : path_(dir_.file("pooled.sh")) {
    std::ofstream(path_) << "#!/bin/sh\n"
                            "trap '' INT\n"
                            "while read job; do\n"
                            "  echo \"{\\\"pid\\\": $$, \\\"job\\\": $job}\"\n"
                            "  case \"$job\" in *fail*) exit 2;; esac\n"
                            "  while echo '{\"more\": true}' && read next; do\n"
                            "    case \"$next\" in *end*) break;; esac\n"
                            "    echo \"{\\\"got\\\": $next}\"\n"
                            "  done\n"
                            "  echo '{\"done\": true}'\n"
                            "done\n";
    chmod(path_.c_str(), 0755);
  }
  const std::string& path() const { return path_; }

 private:
  test::TempDir dir_;
  std::string path_;
};

// What one job of a pool saw: each worker's pid, the items it got, its "done"s.
struct PoolJob {
  std::map<int, int> pid;
  std::map<int, std::vector<int>> got;
  std::map<int, int> done;
  std::vector<int> codes;
};

// One job per worker of `pool`, handing out `items` items to whoever asks first.
PoolJob pool_job(WorkerPool& pool, const std::vector<nlohmann::json>& jobs, int items,
                 const std::function<bool()>& stop = nullptr) {
  PoolJob seen;
  int handed = 0;
  seen.codes = pool.converse(
      jobs,
      [&](int w, const nlohmann::json& line) -> WorkerReply {
        if (line.contains("pid")) seen.pid[w] = line["pid"].get<int>();
        if (line.contains("got")) seen.got[w].push_back(line["got"]["item"].get<int>());
        if (line.contains("done")) ++seen.done[w];
        if (!line.contains("more")) return {};
        if (handed == items) return {.line = nlohmann::json{{"end", true}}};
        return {.line = nlohmann::json{{"item", handed++}}};
      },
      stop);
  return seen;
}

TEST(WorkerPool, OneProcessPerDeviceServesEveryJobInTurn) {
  const PooledWorker worker;
  WorkerPool pool(worker.path(), {0, 1});
  const PoolJob first = pool_job(pool, {{{"n", 0}}, {{"n", 1}}}, 4);
  const PoolJob second = pool_job(pool, {{{"n", 2}}, {{"n", 3}}}, 3);
  EXPECT_EQ(first.codes, (std::vector<int>{0, 0}));
  EXPECT_EQ(second.codes, (std::vector<int>{0, 0}));
  for (int w : {0, 1}) {
    EXPECT_EQ(first.done.at(w), 1);
    EXPECT_EQ(second.done.at(w), 1);
    EXPECT_EQ(first.pid.at(w), second.pid.at(w)) << "worker " << w << " was started again";
  }
  EXPECT_NE(first.pid.at(0), first.pid.at(1));
  for (const PoolJob* job : {&first, &second}) {
    std::vector<int> all = job->got.count(0) ? job->got.at(0) : std::vector<int>{};
    if (job->got.count(1)) all.insert(all.end(), job->got.at(1).begin(), job->got.at(1).end());
    std::sort(all.begin(), all.end());
    std::vector<int> expected(job == &first ? 4 : 3);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(all, expected) << "every item once, in each job";
  }
}

TEST(WorkerPool, AWorkerThatDiesGivesItsExitCodeAndTheNextJobStartsItAfresh) {
  const PooledWorker worker;
  WorkerPool pool(worker.path(), {0, 1});
  const PoolJob failing = pool_job(pool, {{{"n", 0}}, {{"n", 1}, {"fail", true}}}, 2);
  EXPECT_EQ(failing.codes, (std::vector<int>{0, 2}));
  EXPECT_EQ(failing.got.at(0), (std::vector<int>{0, 1})) << "the living worker took every item";
  const PoolJob next = pool_job(pool, {{{"n", 2}}, {{"n", 3}}}, 2);
  EXPECT_EQ(next.codes, (std::vector<int>{0, 0}));
  EXPECT_EQ(next.pid.at(0), failing.pid.at(0));
  EXPECT_NE(next.pid.at(1), failing.pid.at(1));
  EXPECT_EQ(next.done.at(1), 1);
}

TEST(WorkerPool, StopEndsTheJobOfEveryWorkerAndTheNextJobStartsThemAfresh) {
  const PooledWorker worker;
  WorkerPool pool(worker.path(), {0, 1});
  const auto started = std::chrono::steady_clock::now();
  int asked = 0;
  // Never answered: only the stop can end the workers' wait for more.
  const std::vector<int> codes = pool.converse(
      {{{"n", 0}}, {{"n", 1}}},
      [&](int, const nlohmann::json& line) -> WorkerReply {
        asked += line.contains("more");
        return {};
      },
      [&] { return std::chrono::steady_clock::now() - started > std::chrono::milliseconds(200); });
  EXPECT_EQ(codes, (std::vector<int>{0, 0})) << "each read the end of its input and exited";
  EXPECT_EQ(asked, 2);
  const PoolJob next = pool_job(pool, {{{"n", 2}}, {{"n", 3}}}, 1);
  EXPECT_EQ(next.codes, (std::vector<int>{0, 0}));
  EXPECT_EQ(next.done.at(0) + next.done.at(1), 2);
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
