// The fuzz targets' entry functions: one input in, the code under test run on it.
// An entry returns normally when the input was accepted or refused with a
// timeroof::Error (a clean usage error); any other exception escapes, and a crash,
// a sanitizer report or a hang is a finding too. The libFuzzer executables
// (fuzz_main.cpp, TIMEROOF_FUZZ=ON) and the CPU tier's replay of fuzz/corpus and
// fuzz/regressions (tests/cpu/fuzz_regression_test.cpp) call the same functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace timeroof::fuzz {

// Sweep flags: the first line is a family axis' key or an option, the rest its
// value list ("1..1024:x2", "16..128:+16", "fp16,fp32"); or several "key=value"
// lines, read as `timeroof sweep` flags (spec_from_flags).
void value_list(std::string_view data);
// A TOML sweep spec (spec_from_toml_text).
void toml_spec(std::string_view data);
// A JSON export document (parse_untrusted_json, parse_export_document), written
// back and read again: the second export equals the first.
void export_json(std::string_view data);

// The targets ("value_list", "toml_spec", "export_json"), and the entry of one of them.
std::vector<std::string> targets();
void run(const std::string& target, std::string_view data);

}  // namespace timeroof::fuzz
