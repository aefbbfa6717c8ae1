#include "src/cli/shell_files.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "src/cli/command_options.hpp"
#include "src/cli/commands.hpp"
#include "timeroof/version.hpp"

namespace timeroof::cli {
namespace {

struct OptionInfo {
  std::vector<std::string> names;  // "--db", "-h"
  std::string description;
  std::string value;  // CLI11's type name (TEXT, INT); empty for a flag
};

// One command of the tree: "timeroof", "timeroof sweep", "timeroof sweep conv2d".
struct CommandInfo {
  std::string path;
  std::string description;
  std::string footer;
  std::vector<std::pair<std::string, std::string>> subcommands;  // name, description
  std::vector<OptionInfo> options;
  std::vector<std::string> positionals;
};

// The scripts quote names in single quotes and match them as words: a name
// outside this set would be a change of the command line they cannot carry.
const std::string& checked_name(const std::string& name) {
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
  if (!plain) throw std::logic_error("command-line name '" + name + "' cannot go into a script");
  return name;
}

// Visible subcommands only: the workers' group is "" (hidden from --help).
std::vector<const CLI::App*> visible_subcommands(const CLI::App& app) {
  std::vector<const CLI::App*> visible;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!sub->get_group().empty()) visible.push_back(sub);
  return visible;
}

void collect(const CLI::App& app, const std::string& path, std::vector<CommandInfo>& commands) {
  CommandInfo info;
  info.path = path;
  info.description = app.get_description();
  info.footer = app.get_footer();
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;
    if (!option->nonpositional()) {
      info.positionals.push_back(checked_name(option->get_name()));
      continue;
    }
    OptionInfo entry;
    for (const std::string& name : option->get_lnames())
      entry.names.push_back("--" + checked_name(name));
    for (const std::string& name : option->get_snames())
      entry.names.push_back("-" + checked_name(name));
    entry.description = option->get_description();
    if (option->get_items_expected_max() > 0) {  // flags expect none
      entry.value = option->get_type_name();
      if (entry.value.empty()) entry.value = "VALUE";
    }
    info.options.push_back(std::move(entry));
  }
  const std::vector<const CLI::App*> subs = visible_subcommands(app);
  for (const CLI::App* sub : subs)
    info.subcommands.emplace_back(checked_name(sub->get_name()), sub->get_description());
  commands.push_back(std::move(info));
  for (const CLI::App* sub : subs) collect(*sub, path + " " + sub->get_name(), commands);
}

std::vector<CommandInfo> command_tree(const CLI::App& app) {
  std::vector<CommandInfo> commands;
  collect(app, "timeroof", commands);
  return commands;
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::string joined_names(const CommandInfo& command, bool options) {
  std::string words;
  const auto add = [&words](const std::string& word) {
    words += (words.empty() ? "" : " ") + word;
  };
  if (options) {
    for (const OptionInfo& option : command.options)
      for (const std::string& name : option.names) add(name);
  } else {
    for (const auto& sub : command.subcommands) add(sub.first);
  }
  return words;
}

using Entries = std::vector<std::pair<std::string, std::string>>;  // key, quoted value

// `local -A NAME=(...)` in the literal syntax bash and zsh (5.5 and later) share:
// ['KEY']=VALUE, each value already quoted for the shell.
std::string local_array(const char* name, const Entries& entries) {
  std::string text = std::string("  local -A ") + name + "=(\n";
  for (const auto& [key, value] : entries) text += "    ['" + key + "']=" + value + "\n";
  return text + "  )\n";
}

// Command path -> its subcommands' names, for the commands that have some.
Entries subcommand_names(const std::vector<CommandInfo>& commands) {
  Entries entries;
  for (const CommandInfo& command : commands)
    if (!command.subcommands.empty())
      entries.emplace_back(command.path, "'" + joined_names(command, false) + "'");
  return entries;
}

// "COMMAND PATH --option" -> 1, for the options that take a value.
Entries value_options(const std::vector<CommandInfo>& commands) {
  Entries entries;
  for (const CommandInfo& command : commands)
    for (const OptionInfo& option : command.options)
      if (!option.value.empty())
        for (const std::string& name : option.names)
          entries.emplace_back(command.path + " " + name, "1");
  return entries;
}

// Lines inside one zsh $'...' string, newline-separated: backslashes and single
// quotes escaped, each line kept to one.
std::string zsh_lines(const std::vector<std::string>& lines) {
  std::string quoted = "$'";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) quoted += "\\n";
    for (const char c : one_line(lines[i])) {
      if (c == '\\' || c == '\'') quoted += '\\';
      quoted += c;
    }
  }
  return quoted + "'";
}

// One line of roff text: backslashes and hyphens escaped, and a leading '.' or
// '\'' kept from being read as a request.
std::string roff(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

// Multi-line text as roff lines, blank lines as paragraph breaks.
std::string roff_lines(const std::string& text) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    out += line.empty() ? ".PP\n" : roff(line) + "\n";
  return out;
}

}  // namespace

// The bash and zsh scripts share their outline (a word loop over the command path)
// but not a line of shell: each is kept whole, as its shell reads it.
std::string bash_completion(const CLI::App& app) {
  const std::vector<CommandInfo> commands = command_tree(app);
  std::string script =
      "# bash completion for timeroof, generated from its command line by\n"
      "# `timeroof completion bash`.\n"
      "_timeroof() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
      "  local command=timeroof i\n";
  Entries options;
  for (const CommandInfo& command : commands)
    options.emplace_back(command.path, "'" + joined_names(command, true) + "'");
  script += local_array("commands", subcommand_names(commands)) + local_array("options", options) +
            local_array("takes_value", value_options(commands));
  script +=
      "  # The command path: the words that name a subcommand, values of options skipped.\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    if [[ -n ${takes_value[\"$command ${COMP_WORDS[i]}\"]} ]]; then\n"
      "      ((i++))\n"
      "    elif [[ \" ${commands[$command]} \" == *\" ${COMP_WORDS[i]} \"* ]]; then\n"
      "      command+=\" ${COMP_WORDS[i]}\"\n"
      "    fi\n"
      "  done\n"
      "  if [[ -n ${takes_value[\"$command $prev\"]} || ( $cur != -* && -z ${commands[$command]} "
      ") ]]; then\n"
      "    compopt -o filenames 2>/dev/null\n"
      "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      "  elif [[ $cur == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"${options[$command]}\" -- \"$cur\"))\n"
      "  else\n"
      "    COMPREPLY=($(compgen -W \"${commands[$command]}\" -- \"$cur\"))\n"
      "  fi\n"
      "}\n"
      "complete -F _timeroof timeroof\n";
  return script;
}

std::string zsh_completion(const CLI::App& app) {
  const std::vector<CommandInfo> commands = command_tree(app);
  std::string script =
      "#compdef timeroof\n"
      "# zsh completion for timeroof, generated from its command line by\n"
      "# `timeroof completion zsh`.\n"
      "_timeroof() {\n"
      "  local command=timeroof i\n"
      "  local -a entries\n";
  Entries command_help, option_help;
  for (const CommandInfo& command : commands) {
    std::vector<std::string> lines;
    for (const OptionInfo& option : command.options)
      for (const std::string& name : option.names) lines.push_back(name + ":" + option.description);
    option_help.emplace_back(command.path, zsh_lines(lines));
    if (command.subcommands.empty()) continue;
    lines.clear();
    for (const auto& [name, description] : command.subcommands)
      lines.push_back(name + ":" + description);
    command_help.emplace_back(command.path, zsh_lines(lines));
  }
  script += local_array("commands", subcommand_names(commands)) +
            local_array("command_help", command_help) + local_array("option_help", option_help) +
            local_array("takes_value", value_options(commands));
  script +=
      "  # The command path: the words that name a subcommand, values of options skipped.\n"
      "  for ((i = 2; i < CURRENT; i++)); do\n"
      "    if [[ -n ${takes_value[$command ${words[i]}]} ]]; then\n"
      "      ((i++))\n"
      "    elif [[ \" ${commands[$command]} \" == *\" ${words[i]} \"* ]]; then\n"
      "      command+=\" ${words[i]}\"\n"
      "    fi\n"
      "  done\n"
      "  if [[ -n ${takes_value[$command ${words[CURRENT-1]}]} ]]; then\n"
      "    _files\n"
      "  elif [[ ${words[CURRENT]} == -* ]]; then\n"
      "    entries=(\"${(@f)option_help[$command]}\")\n"
      "    _describe -t options option entries\n"
      "  elif [[ -n ${commands[$command]} ]]; then\n"
      "    entries=(\"${(@f)command_help[$command]}\")\n"
      "    _describe -t commands command entries\n"
      "  else\n"
      "    _files\n"
      "  fi\n"
      "}\n"
      "if [[ ${funcstack[1]} == _timeroof ]]; then\n"
      "  _timeroof \"$@\"\n"
      "else\n"
      "  compdef _timeroof timeroof\n"
      "fi\n";
  return script;
}

std::string man_page(const CLI::App& app, const std::string& version) {
  const std::vector<CommandInfo> commands = command_tree(app);
  const CommandInfo& root = commands.front();
  std::string page = ".\\\" Generated from timeroof's command line by `timeroof completion man`.\n";
  page += ".TH TIMEROOF 1 \"\" \"timeroof " + roff(version) + "\" \"User Commands\"\n";
  page += ".SH NAME\ntimeroof \\- why a deep\\-learning operator takes the time it takes\n";
  page += ".SH SYNOPSIS\n.B timeroof\n.I command\n[\\fIoptions\\fR] [\\fIarguments\\fR]\n";
  page += ".SH DESCRIPTION\n" + roff_lines(root.description);
  page += ".SH COMMANDS\n";
  for (std::size_t i = 1; i < commands.size(); ++i) {
    const CommandInfo& command = commands[i];
    page += ".SS \"" + roff(command.path) + "\"\n" + roff_lines(command.description);
    if (!command.positionals.empty()) {
      page += ".PP\nArguments:";
      for (const std::string& name : command.positionals) page += " \\fI" + roff(name) + "\\fR";
      page += "\n";
    }
    if (!command.subcommands.empty()) {
      page += ".PP\nCommands:";
      for (const auto& sub : command.subcommands) page += " \\fB" + roff(sub.first) + "\\fR";
      page += "\n";
    }
    for (const OptionInfo& option : command.options) {
      page += ".TP\n";
      std::string names;
      for (const std::string& name : option.names)
        names += (names.empty() ? "\\fB" : ", \\fB") + roff(name) + "\\fR";
      if (!option.value.empty()) names += " \\fI" + roff(option.value) + "\\fR";
      page += names + "\n" + roff(one_line(option.description)) + "\n";
    }
    if (!command.footer.empty()) page += ".PP\n.nf\n" + roff_lines(command.footer) + ".fi\n";
  }
  page += ".SH \"EXAMPLES AND EXIT STATUS\"\n.nf\n" + roff_lines(root.footer) + ".fi\n";
  page +=
      ".SH FILES\n.TP\n.B ./timeroof.db\nthe results store (\\fB\\-\\-db\\fR names another)\n"
      ".SH \"SEE ALSO\"\n\\fBnsys\\fR(1), \\fBncu\\fR(1); the README and docs/design.md of the "
      "timeroof sources.\n";
  return page;
}

void register_completion(CLI::App& app, Action& action) {
  auto kind = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand(
      "completion", "Print the bash or zsh completion script, or the man page (roff)");
  command->add_option("kind", *kind, "bash, zsh or man")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "man"}));
  command->footer(
      "Examples:\n  source <(timeroof completion bash)\n"
      "  timeroof completion zsh > ~/.zfunc/_timeroof\n"
      "  timeroof completion man | man -l -\n\n"
      "`cmake --install` and the .deb install all three.");
  const CLI::App* root = &app;
  when_chosen(*command, action, [root, kind] {
    const std::string text = *kind == "bash"  ? bash_completion(*root)
                             : *kind == "zsh" ? zsh_completion(*root)
                                              : man_page(*root, kToolVersion);
    std::fputs(text.c_str(), stdout);
    return ExitCode::ok;
  });
}

}  // namespace timeroof::cli
