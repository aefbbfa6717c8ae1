// The TOML readers' shared parts, private to spec_toml.cpp (sweep files) and
// model_table.cpp (model layer tables): a file read as text, the guard around
// toml++'s unreachable paths, and an error's position. Include after toml++.
#pragma once

#include <string>
#include <string_view>

namespace timeroof::spec_detail {

// "<path>:<line>:<column>: " of a TOML node or key.
std::string at(const std::string& path, const toml::source_region& region);
// Refuses (usage error) the characters for which toml++ 3.3 reaches
// __builtin_unreachable(), before toml++ reads `text` (spec_toml.cpp says which).
void refuse_tomlpp_unreachable(std::string_view text, const std::string& path);
// `text` parsed (after refuse_tomlpp_unreachable); malformed TOML is a usage error
// at its file, line and column.
toml::table parse_toml(const std::string& text, const std::string& path);
// The text of the regular file `path`; `what` ("sweep spec", "model table")
// names it in the usage error when it cannot be read or is no regular file.
std::string read_toml_file(const std::string& path, const std::string& what);

}  // namespace timeroof::spec_detail
