#include "inject/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace timeroof::inject {

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

UniqueFd open_for_writing(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
  if (fd < 0)
    throw Error(ExitCode::environment, "cannot open " + path + " (" + std::strerror(errno) + ")");
  return UniqueFd(fd);
}

void write_all(const UniqueFd& fd, std::string_view text, const std::string& path) {
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(ExitCode::environment,
                  "cannot write " + path + " (" + std::strerror(n < 0 ? errno : ENOSPC) + ")");
    written += static_cast<std::size_t>(n);
  }
}

}  // namespace timeroof::inject
