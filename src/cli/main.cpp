// The timeroof command line. Each command registers itself beside its run
// function (register_commands, src/cli/commands.hpp); this is the one place that
// catches: every error below becomes one line on stderr and the exit code of
// docs/design.md.
#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/format.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/console.hpp"
#include "timeroof/version.hpp"

namespace {

// A one-line usage error in the tool's own voice, with the fix.
int usage_failure(const CLI::Error& error, const CLI::App& app) {
  std::string message = error.what();
  if (!message.empty() && message.back() == '\n') message.pop_back();
  std::string command = "timeroof";
  for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
  // CLI11 quotes the arguments it refuses: one line, nothing the terminal acts on.
  std::fprintf(stderr, "timeroof: %s; see `%s --help`\n", timeroof::terminal_safe(message).c_str(),
               command.c_str());
  return static_cast<int>(timeroof::ExitCode::usage);
}

// CLI11's generic "subcommand required" names no command: name the unknown one.
bool unknown_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::string known;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == argv[1]) return false;
    known += (known.empty() ? "" : ", ") + sub->get_name();
  }
  std::fprintf(stderr, "timeroof: unknown command '%s' (commands: %s); see `timeroof --help`\n",
               timeroof::terminal_safe(argv[1]).c_str(), known.c_str());
  return true;
}

// CLI11's help, its long descriptions wrapped to the terminal (to 100 columns where
// stdout is no terminal).
class WrappedHelp : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    const std::size_t columns = timeroof::cli::terminal_columns();
    return timeroof::cli::wrap_help(CLI::Formatter::make_help(app, std::move(name), mode),
                                    columns > 0 ? columns : 100);
  }
};

}  // namespace

int main(int argc, char** argv) {
  timeroof::cli::CommonOptions options;
  options.command_line = timeroof::shell_join(std::vector<std::string>(argv, argv + argc));

  CLI::App app{
      "timeroof: why a deep-learning operator takes the time it takes.\n"
      "Measures the GPU's real ceilings, reads CUPTI counters, and draws classic and\n"
      "time-based Roofline charts.",
      "timeroof"};
  app.set_version_flag("--version", std::string("timeroof ") + timeroof::kToolVersion + " (" +
                                        timeroof::kGitSha + ")");
  app.require_subcommand(1);
  app.formatter(std::make_shared<WrappedHelp>());  // before the commands: they inherit it
  app.footer(
      "Examples:\n"
      "  timeroof info                 GPU, clocks, library versions, counter access\n"
      "  timeroof run                  the main job: measure, store, report\n"
      "  timeroof runs                 runs in ./timeroof.db\n"
      "  timeroof export --out r.json  all runs as JSON\n"
      "  timeroof merge all.db s*.db   join the stores of sweep shards (--shard I/N)\n"
      "  timeroof report --out DIR     HTML and Markdown report of the stored runs\n"
      "  timeroof profile -- ./app     trace any CUDA program into the store\n\n"
      "Exit codes: 0 ok, 1 usage or input error, 2 environment (no GPU, no counter\n"
      "permission), 3 partial results, 4 a regression (compare).");
  timeroof::cli::Action action;
  timeroof::cli::register_commands(app, options, action);

  if (unknown_command(app, argc, argv)) return static_cast<int>(timeroof::ExitCode::usage);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& done) {  // --help, --help-all, --version
    return app.exit(done);
  } catch (const CLI::ParseError& error) {
    return usage_failure(error, app);
  }

  try {
    return static_cast<int>(action());
  } catch (const timeroof::Error& error) {
    // Messages quote names from files and stores: one line, nothing the terminal acts on.
    std::fprintf(stderr, "timeroof: %s\n", timeroof::terminal_safe(error.what()).c_str());
    return static_cast<int>(error.code());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "timeroof: internal error: %s\n",
                 timeroof::terminal_safe(error.what()).c_str());
    return static_cast<int>(timeroof::ExitCode::environment);
  }
}
