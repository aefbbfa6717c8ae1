// Files generated from the command-line definition itself, so they never drift
// from it: bash and zsh completion and the man page (`timeroof completion`,
// installed by `cmake --install` and the .deb).
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace timeroof::cli {

// A bash completion script for `app`: commands, subcommands (the sweep
// families), their options, and file names after options that take a value.
std::string bash_completion(const CLI::App& app);
// A zsh completion script (#compdef) with the commands' and options' help.
std::string zsh_completion(const CLI::App& app);
// The man page, in roff (man(7)): every visible command with its options,
// examples and the exit codes.
std::string man_page(const CLI::App& app, const std::string& version);

}  // namespace timeroof::cli
