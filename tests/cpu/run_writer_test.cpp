// A run's writer and its lock (#16): a run whose writer was killed reads as
// interrupted and resumes; a second writer of one run (another resume, or a
// resume racing the run's first process) is refused at once, naming the holder,
// and the holder completes. `sweep --resume` needs a GPU, so these drive the
// store as the sweep does (begin_run, claim_run, add_point, update_run) from
// forked processes; the read commands are run as the built binary.
#include "src/store/run_writer.hpp"

#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "src/store/results_store.hpp"
#include "tests/support/raw_sqlite.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof {
namespace {

namespace fs = std::filesystem;
using Access = ResultsStore::Access;
using test::run_tool;
using test::TempDir;

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' not found in: " << text;
}

template <typename F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(ExitCode::usage)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a usage error, nothing was thrown";
  return "";
}

using test::raw_exec;

// Every row of every table, as text, through SQLite's C API.
std::string every_row(const std::string& path) {
  sqlite3* db = nullptr;
  std::string rows;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return "<cannot open>";
  }
  std::vector<std::string> tables;
  sqlite3_stmt* statement = nullptr;
  sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1,
                     &statement, nullptr);
  while (sqlite3_step(statement) == SQLITE_ROW)
    tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)));
  sqlite3_finalize(statement);
  for (const std::string& table : tables) {
    rows += "table " + table + "\n";
    sqlite3_prepare_v2(db, ("SELECT * FROM \"" + table + "\" ORDER BY rowid").c_str(), -1,
                       &statement, nullptr);
    while (sqlite3_step(statement) == SQLITE_ROW) {
      for (int column = 0; column < sqlite3_column_count(statement); ++column) {
        const unsigned char* text = sqlite3_column_text(statement, column);
        rows += text != nullptr ? reinterpret_cast<const char*>(text) : "<null>";
        rows += '|';
      }
      rows += '\n';
    }
    sqlite3_finalize(statement);
  }
  sqlite3_close(db);
  return rows;
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

Run simple_run(const std::string& uuid, const std::string& host) {
  Run run;
  run.uuid = uuid;
  run.tool_version = "0.1.0";
  run.git_sha = "0123456789abcdef0123456789abcdef01234567";
  run.command_line = "timeroof sweep conv2d --batch 1,2,4,8";
  run.host = host;
  run.started_at = "2026-11-26T17:00:00.000Z";
  run.machine.gpu.name = "NVIDIA H100";
  return run;
}

Point numbered_point(int seq) {
  Point point;
  point.sweep = "conv2d";
  point.seq = seq;
  point.op = "conv2d_fwd";
  point.params = {{"batch", 1 << seq}};
  point.precision = "fp16";
  point.flops = 1e9 * (seq + 1);
  point.min_bytes = 1e6;
  return point;
}

std::string status_of(const std::string& path, std::size_t index = 0) {
  ResultsStore reader = ResultsStore::open(path, Access::read_only);
  return reader.list_runs().at(index).status;
}

// Two pipes between this process and a forked child: the child says "ready"
// and waits for "go". A read gives up after 60 s, so a test fails, never hangs.
class Channel {
 public:
  Channel() {
    if (pipe(up_) != 0 || pipe(down_) != 0) throw std::runtime_error("pipe");
  }
  ~Channel() {
    for (int fd : {up_[0], up_[1], down_[0], down_[1]})
      if (fd >= 0) close(fd);
  }
  bool ready() { return send(up_[1]); }          // child
  bool wait_go() { return receive(down_[0]); }   // child
  bool wait_ready() { return receive(up_[0]); }  // parent
  bool go() { return send(down_[1]); }           // parent

 private:
  static bool send(int fd) { return write(fd, "x", 1) == 1; }
  static bool receive(int fd) {
    pollfd ready{fd, POLLIN, 0};
    char c = 0;
    return poll(&ready, 1, 60000) == 1 && read(fd, &c, 1) == 1;
  }
  int up_[2] = {-1, -1};
  int down_[2] = {-1, -1};
};

// Runs body in a forked child, which ends with its return value (3 when it
// threw). No gtest code runs in the child; _exit skips the parent's handlers.
template <typename Body>
pid_t fork_child(Body&& body) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  int code = 3;
  try {
    code = body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %d: %s\n", static_cast<int>(getpid()), e.what());
  }
  _exit(code);
}

int exit_code_of(pid_t child) {
  int status = 0;
  if (waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Completes a resumed (claimed) run as a sweep would: its missing points, then
// complete.
void finish_points(ResultsStore& store, Run& run, int count) {
  const std::set<int> done = store.finished_point_seqs(run.id, "conv2d");
  for (int seq = 0; seq < count; ++seq) {
    if (done.count(seq)) continue;
    Point point = numbered_point(seq);
    store.add_point(run.id, point);
  }
  run.status = "complete";
  run.finished_at = "2026-11-26T18:00:00.000Z";
  store.update_run(run);
}

constexpr const char* kUuidA = "a1b2c3d4-0000-4000-8000-00000000000a";
constexpr const char* kUuidB = "b1b2c3d4-0000-4000-8000-00000000000b";
constexpr const char* kUuidC = "c1b2c3d4-0000-4000-8000-00000000000c";

// ---- Telling whether a writer is still there ----

TEST(RunWriter, StateFromTheRecordedIdentity) {
  const WriterIdentity me = this_writer();
  EXPECT_EQ(me.pid, getpid());
  EXPECT_GT(me.start_ticks, 0);
  EXPECT_FALSE(me.boot_id.empty());
  EXPECT_EQ(writer_state(me), WriterState::alive);

  const pid_t reaped = fork_child([] { return 0; });
  ASSERT_EQ(exit_code_of(reaped), 0);
  WriterIdentity dead = me;
  dead.pid = reaped;
  EXPECT_EQ(writer_state(dead), WriterState::gone);

  WriterIdentity reused = me;  // this pid, but a process started at another time
  reused.start_ticks = me.start_ticks - 1;
  EXPECT_EQ(writer_state(reused), WriterState::gone);

  WriterIdentity before_reboot = me;
  before_reboot.boot_id = "00000000-0000-0000-0000-000000000000";
  EXPECT_EQ(writer_state(before_reboot), WriterState::gone);

  WriterIdentity elsewhere = dead;
  elsewhere.host = me.host + "-elsewhere";
  EXPECT_EQ(writer_state(elsewhere), WriterState::unknown);
  WriterIdentity other_container = dead;
  other_container.pid_namespace = "pid:[1]";
  EXPECT_EQ(writer_state(other_container), WriterState::unknown);

  EXPECT_EQ(writer_from_text(to_text(me)), me);
  EXPECT_EQ(writer_from_text("{\"pid\": \"12\"}"), std::nullopt);
  EXPECT_EQ(writer_from_text("not json"), std::nullopt);
  EXPECT_TRUE(Contains(describe(me), "pid " + std::to_string(getpid()) + " on " + me.host));
}

// ---- A killed writer ----

TEST(RunWriter, AKilledRunReadsAsInterruptedAndResumes) {
  const TempDir dir;
  const std::string db = dir.file("t.db");
  Channel channel;
  const pid_t child = fork_child([&] {
    ResultsStore store = ResultsStore::open(db, Access::read_write);
    timeroof::Run run = simple_run(kUuidA, this_host());
    store.begin_run(run);
    Point first = numbered_point(0);
    store.add_point(run.id, first);
    channel.ready();
    for (;;) pause();  // measuring, until killed
    return 0;
  });
  ASSERT_TRUE(channel.wait_ready());
  EXPECT_EQ(status_of(db), "running");  // its writer is there
  EXPECT_TRUE(fs::exists(db + ".lock"));
  kill(child, SIGKILL);
  ASSERT_EQ(exit_code_of(child), 128 + SIGKILL);

  // Read commands derive the state and change nothing stored. (The last of them
  // to close folds the killed writer's WAL into the file, as any SQLite reader
  // that closes last does, and removes the -wal and -shm: pages move, rows do not.)
  const std::string stored = every_row(db);
  EXPECT_EQ(status_of(db), "interrupted");
  const test::ToolResult runs = run_tool({"runs", "--db", db});
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_TRUE(Contains(runs.out, "interrupted"));
  const test::ToolResult exported = run_tool({"export", "1", "--db", db});
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_TRUE(Contains(exported.out, "\"status\": \"interrupted\""));
  EXPECT_FALSE(fs::exists(db + "-wal") || fs::exists(db + "-shm"));
  EXPECT_EQ(every_row(db), stored);
  {
    // What is stored is still what the killed process wrote.
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* statement = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT status FROM runs", -1, &statement, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(statement), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)), "running");
    sqlite3_finalize(statement);
    sqlite3_close(raw);
  }

  // --resume: taken, running again under this process, then completed.
  {
    ResultsStore store = ResultsStore::open(db, Access::read_write);
    RunRecord record = *store.load_run("1");
    EXPECT_EQ(record.run.status, "interrupted");
    store.claim_run(record.run);
    EXPECT_EQ(record.run.status, "running");
    EXPECT_EQ(status_of(db), "running");
    finish_points(store, record.run, 4);
    const RunRecord done = store.load_run(record.run.id);
    EXPECT_EQ(done.run.status, "complete");
    EXPECT_EQ(done.points.size(), 4u);
    EXPECT_EQ(done.points[0], record.points[0]);  // the killed process's point, untouched
  }
  EXPECT_FALSE(fs::exists(db + ".lock")) << "the last writer removes the lock file";
}

TEST(RunWriter, ForgedWritersOfDeadAndForeignProcesses) {
  const TempDir dir;
  const std::string db = dir.file("t.db");
  {
    ResultsStore store = ResultsStore::open(db, Access::read_write);
    for (const char* uuid : {kUuidA, kUuidB, kUuidC}) {
      timeroof::Run run = simple_run(uuid, uuid == kUuidB ? "gpu-node-7" : this_host());
      store.begin_run(run);
    }
  }
  const pid_t reaped = fork_child([] { return 0; });
  ASSERT_EQ(exit_code_of(reaped), 0);
  WriterIdentity dead = this_writer();
  dead.pid = reaped;
  WriterIdentity foreign = dead;
  foreign.host = "gpu-node-7";
  raw_exec(db, "UPDATE runs SET writer_json = " + quoted(to_text(dead)) + " WHERE id IN (1, 3);" +
                   "UPDATE runs SET writer_json = " + quoted(to_text(foreign)) + " WHERE id = 2;" +
                   "UPDATE runs SET status = 'partial' WHERE id = 3;");
  EXPECT_EQ(status_of(db, 0), "interrupted");
  EXPECT_EQ(status_of(db, 1), "running");  // on another host: cannot be told
  EXPECT_EQ(status_of(db, 2), "partial");  // only a running run is judged
  const test::ToolResult runs = run_tool({"runs", "--db", db});
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_TRUE(Contains(runs.out, "interrupted"));
  EXPECT_TRUE(Contains(runs.out, "running (on gpu-node-7: cannot tell from here)"));
  EXPECT_FALSE(fs::exists(db + ".lock"));
}

// ---- Two writers of one run ----

TEST(RunWriter, ASecondResumeIsRefusedAndTheFirstCompletes) {
  const TempDir dir;
  const std::string db = dir.file("t.db");
  std::int64_t id = 0;
  {
    // A sweep stopped with Ctrl-C after one point.
    ResultsStore store = ResultsStore::open(db, Access::read_write);
    timeroof::Run run = simple_run(kUuidA, this_host());
    id = store.begin_run(run);
    Point first = numbered_point(0);
    store.add_point(run.id, first);
    run.status = "partial";
    store.update_run(run);
  }
  Channel channel;
  const pid_t first = fork_child([&] {
    ResultsStore store = ResultsStore::open(db, Access::read_write);
    timeroof::Run run = store.load_run(id).run;
    store.claim_run(run);
    channel.ready();
    if (!channel.wait_go()) return 2;
    finish_points(store, run, 4);
    return 0;
  });
  ASSERT_TRUE(channel.wait_ready());

  ResultsStore second = ResultsStore::open(db, Access::read_write);
  timeroof::Run run = second.load_run(id).run;
  const std::string message = usage_error_of([&] { second.claim_run(run); });
  EXPECT_TRUE(Contains(message, "run " + std::to_string(id) + " is being written by timeroof pid " +
                                    std::to_string(first) + " on " + this_host()));
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(run.status, "running");  // as loaded: the refusal changed nothing
  EXPECT_EQ(status_of(db), "running");

  ASSERT_TRUE(channel.go());
  EXPECT_EQ(exit_code_of(first), 0);
  const RunRecord done = second.load_run(id);
  EXPECT_EQ(done.run.status, "complete");
  EXPECT_EQ(done.points.size(), 4u);
  // Once the first has let go, the run can be taken again.
  timeroof::Run again = done.run;
  EXPECT_NO_THROW(second.claim_run(again));
}

TEST(RunWriter, AResumeRacingTheFirstWriterIsRefused) {
  const TempDir dir;
  const std::string db = dir.file("t.db");
  Channel channel;
  const pid_t writer = fork_child([&] {
    ResultsStore store = ResultsStore::open(db, Access::read_write);
    timeroof::Run run = simple_run(kUuidA, this_host());
    store.begin_run(run);
    channel.ready();
    if (!channel.wait_go()) return 2;
    finish_points(store, run, 3);
    return 0;
  });
  ASSERT_TRUE(channel.wait_ready());
  {
    ResultsStore store = ResultsStore::open(db, Access::read_write);
    RunRecord record = *store.load_run("1");
    EXPECT_EQ(record.run.status, "running");
    EXPECT_TRUE(Contains(usage_error_of([&] { store.claim_run(record.run); }),
                         "is being written by timeroof pid " + std::to_string(writer)));
  }
  ASSERT_TRUE(channel.go());
  EXPECT_EQ(exit_code_of(writer), 0);
  EXPECT_EQ(status_of(db), "complete");
  EXPECT_FALSE(fs::exists(db + ".lock"));

  // Two stores of one process hold runs apart too (open-file-description locks).
  ResultsStore first = ResultsStore::open(db, Access::read_write);
  timeroof::Run run = simple_run(kUuidB, this_host());
  first.begin_run(run);
  ResultsStore second = ResultsStore::open(db, Access::read_write);
  timeroof::Run same = run;
  EXPECT_TRUE(
      Contains(usage_error_of([&] { second.claim_run(same); }), "pid " + std::to_string(getpid())));
  timeroof::Run other = second.load_run(1).run;  // another run of the store: free
  EXPECT_NO_THROW(second.claim_run(other));
}

// ---- Older stores ----

// A store of schema 2 (no writer column) reads as it is, running runs as
// running (no writer to judge), and a write adds the column, nothing rewritten.
TEST(RunWriter, SchemaTwoStoreIsReadAsItIsAndGainsTheWriterColumnOnWrite) {
  const TempDir dir;
  const std::string db = dir.file("t.db");
  {
    ResultsStore store = ResultsStore::open(db, Access::read_write);
    timeroof::Run run = simple_run(kUuidA, this_host());
    store.begin_run(run);
  }
  raw_exec(db,
           "ALTER TABLE runs DROP COLUMN writer_json; PRAGMA user_version = 2; "
           "PRAGMA journal_mode = DELETE;");
  const std::string before = test::read_file(db);
  EXPECT_EQ(status_of(db), "running");
  EXPECT_EQ(test::read_file(db), before);
  {
    ResultsStore store = ResultsStore::open(db, Access::read_write);
    timeroof::Run run = simple_run(kUuidB, this_host());
    store.begin_run(run);
    RunRecord old = *store.load_run("1");
    EXPECT_EQ(old.run.status, "running");
    store.claim_run(old.run);  // an old run can be resumed: it gets a writer now
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &statement, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(statement), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(statement, 0), kStoreSchemaVersion);
  sqlite3_finalize(statement);
  sqlite3_close(raw);
  ResultsStore reader = ResultsStore::open(db, Access::read_only);
  EXPECT_EQ(reader.list_runs().size(), 2u);
}

}  // namespace
}  // namespace timeroof
