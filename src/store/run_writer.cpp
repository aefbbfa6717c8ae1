#include "src/store/run_writer.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/results.hpp"

namespace timeroof {

namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string link_target(const std::string& path) {
  char target[256] = {};
  const ssize_t size = readlink(path.c_str(), target, sizeof target - 1);
  return size > 0 ? std::string(target, static_cast<std::size_t>(size)) : std::string();
}

// Field 22 of /proc/PID/stat; empty when the process is gone or hidden.
std::optional<std::int64_t> start_ticks_of(std::int64_t pid) {
  const std::string stat = first_line("/proc/" + std::to_string(pid) + "/stat");
  // The command name (field 2) is in parentheses and may hold spaces and ')'.
  const std::size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  for (int number = 3; fields >> field; ++number) {
    if (number != 22) continue;
    try {
      return std::stoll(field);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

flock byte_range(short type, std::int64_t start, std::int64_t length) {
  flock range{};
  range.l_type = type;
  range.l_whence = SEEK_SET;
  range.l_start = static_cast<off_t>(start);
  range.l_len = static_cast<off_t>(length);
  range.l_pid = 0;  // required of open-file-description locks
  return range;
}

// Whether the descriptor still names the file at `path` (a writer letting go
// may have removed it since it was opened).
bool still_at(int fd, const std::string& path) {
  struct stat opened {
  }, named{};
  return fstat(fd, &opened) == 0 && stat(path.c_str(), &named) == 0 &&
         opened.st_dev == named.st_dev && opened.st_ino == named.st_ino;
}

}  // namespace

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return replace_invalid_utf8(name);
}

WriterIdentity this_writer() {
  WriterIdentity me;
  me.host = this_host();
  me.boot_id = first_line("/proc/sys/kernel/random/boot_id");
  me.pid_namespace = link_target("/proc/self/ns/pid");
  me.pid = getpid();
  me.start_ticks = start_ticks_of(me.pid).value_or(0);
  me.since = utc_now_iso8601();
  return me;
}

WriterState writer_state(const WriterIdentity& writer) {
  // What is compared (host, boot, pid namespace) stays for the process's life
  // and across fork: read once, not once per run listed.
  static const WriterIdentity me = this_writer();
  if (writer.host != me.host || writer.boot_id.empty() || me.boot_id.empty())
    return WriterState::unknown;
  if (writer.boot_id != me.boot_id) return WriterState::gone;  // rebooted since
  // Another container on this kernel: its pids are not ours to look up.
  if (writer.pid_namespace.empty() || writer.pid_namespace != me.pid_namespace)
    return WriterState::unknown;
  if (writer.pid <= 0 || writer.pid > INT_MAX) return WriterState::unknown;
  if (kill(static_cast<pid_t>(writer.pid), 0) != 0 && errno == ESRCH) return WriterState::gone;
  const std::optional<std::int64_t> start = start_ticks_of(writer.pid);
  if (!start || writer.start_ticks == 0) return WriterState::unknown;  // hidden (hidepid)
  return *start == writer.start_ticks ? WriterState::alive : WriterState::gone;
}

std::string to_text(const WriterIdentity& writer) {
  return nlohmann::json{{"host", writer.host},
                        {"boot_id", writer.boot_id},
                        {"pid_namespace", writer.pid_namespace},
                        {"pid", writer.pid},
                        {"start_ticks", writer.start_ticks},
                        {"since", writer.since}}
      .dump();
}

std::optional<WriterIdentity> writer_from_text(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  WriterIdentity writer;
  const auto text_field = [&](const char* key, std::string& into) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return false;
    into = it->get<std::string>();
    return true;
  };
  const auto int_field = [&](const char* key, std::int64_t& into) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return false;
    into = it->get<std::int64_t>();
    return true;
  };
  if (!text_field("host", writer.host) || !text_field("boot_id", writer.boot_id) ||
      !text_field("pid_namespace", writer.pid_namespace) || !int_field("pid", writer.pid) ||
      !int_field("start_ticks", writer.start_ticks) || !text_field("since", writer.since))
    return std::nullopt;
  return writer;
}

std::string describe(const WriterIdentity& writer) {
  return "pid " + std::to_string(writer.pid) + " on " + writer.host +
         (writer.since.empty() ? "" : " (since " + writer.since + ")");
}

// ---- RunLocks ----

RunLocks::RunLocks(std::string store_path) : path_(std::move(store_path) + ".lock") {}

RunLocks::~RunLocks() {
  release();
}

RunLocks::RunLocks(RunLocks&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), held_(std::move(other.held_)) {
  other.fd_ = -1;
  other.held_.clear();
}

RunLocks& RunLocks::operator=(RunLocks&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    held_ = std::move(other.held_);
    other.fd_ = -1;
    other.held_.clear();
  }
  return *this;
}

bool RunLocks::try_lock(std::int64_t run_id) {
  // A few rounds at most: each retry means a writer removed the file meanwhile.
  for (int round = 0; round < 100; ++round) {
    if (fd_ < 0) {
      fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0)
        throw environment_error("cannot open the run lock file " + path_ + ": " +
                                std::strerror(errno) + "; a writer needs it beside the store");
    }
    flock range = byte_range(F_WRLCK, run_id, 1);
    if (fcntl(fd_, F_OFD_SETLK, &range) != 0) {
      if (errno != EAGAIN && errno != EACCES)
        throw environment_error("cannot lock run " + std::to_string(run_id) + " in " + path_ +
                                ": " + std::strerror(errno));
      if (!held_.empty() || still_at(fd_, path_)) return false;  // held by another writer
    } else {
      // With no lock of ours in it yet, the file may have been removed after we
      // opened it: a lock on that one keeps no one out.
      if (!held_.empty() || still_at(fd_, path_)) {
        held_.insert(run_id);
        return true;
      }
    }
    close(fd_);
    fd_ = -1;
  }
  throw environment_error("cannot lock run " + std::to_string(run_id) + " in " + path_ +
                          ": the file keeps being replaced");
}

void RunLocks::unlock(std::int64_t run_id) noexcept {
  if (fd_ < 0 || held_.count(run_id) == 0) return;
  flock range = byte_range(F_UNLCK, run_id, 1);
  if (fcntl(fd_, F_OFD_SETLK, &range) == 0) held_.erase(run_id);
}

void RunLocks::release() noexcept {
  if (fd_ < 0) return;
  // The whole file, only if no other writer holds a run in it: then no one needs
  // it, and one that opens it meanwhile finds it gone (still_at) and starts over.
  flock whole = byte_range(F_WRLCK, 0, 0);
  if (fcntl(fd_, F_OFD_SETLK, &whole) == 0 && still_at(fd_, path_)) unlink(path_.c_str());
  close(fd_);  // drops every lock of this descriptor
  fd_ = -1;
  held_.clear();
}

}  // namespace timeroof
