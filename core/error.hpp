// Errors and exit codes. Every layer throws timeroof::Error (or a subclass);
// main() is the one place that catches, prints the one-line reason and exits
// with the code below.
#pragma once

#include <stdexcept>
#include <string>

namespace timeroof {

// Exit codes of the CLI (docs/design.md): they are part of the interface.
enum class ExitCode : int {
  ok = 0,
  usage = 1,        // bad flags, bad input file, bad spec: the message names the fix
  environment = 2,  // no GPU, no counter permission, missing library
  partial = 3,      // interrupted or some points failed; what was measured is kept
  regression = 4,   // compare: a roof or point worse than the threshold beyond its noise
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

// Input the user can fix: a flag, a file, a spec.
inline Error usage_error(const std::string& message) {
  return Error(ExitCode::usage, message);
}
// The machine cannot do it: no GPU, no permission, a library missing.
inline Error environment_error(const std::string& message) {
  return Error(ExitCode::environment, message);
}

}  // namespace timeroof
