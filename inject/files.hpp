// The injection library's files (the journal, the list of loaded libraries):
// whole writes to descriptors owned by RAII. Part of the injection library of
// `timeroof profile`.
#pragma once

#include <string>
#include <string_view>

namespace timeroof::inject {

// A file descriptor, closed with its owner.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_ = -1;
};

// Opens `path` for writing with `flags` besides O_WRONLY | O_CREAT | O_CLOEXEC
// (O_APPEND, O_TRUNC), mode 0644. Throws timeroof::Error naming the file.
UniqueFd open_for_writing(const std::string& path, int flags);

// Writes all of `text` (looping where the kernel takes part of it). Throws
// timeroof::Error naming `path`.
void write_all(const UniqueFd& fd, std::string_view text, const std::string& path);

}  // namespace timeroof::inject
