// Sweep specs from TOML files ([sweep], [axes], [[point]]): the reader, with every
// error at its file, line and column, and the guard around toml++'s unreachable
// paths. Separate from spec.cpp's flags and value lists, which it reuses.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// Header-only: the device machine has no libtomlplusplus.so.
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include "core/error.hpp"
#include "core/format.hpp"
#include "sweeps/spec_parts.hpp"
#include "sweeps/toml_parts.hpp"

namespace timeroof {

using namespace spec_detail;

namespace spec_detail {

std::string at(const std::string& path, const toml::source_region& region) {
  return path + ":" + std::to_string(region.begin.line) + ":" +
         std::to_string(region.begin.column) + ": ";
}

}  // namespace spec_detail

namespace {

const char* type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date/time";
    default:
      return "nothing";
  }
}

// One TOML value (scalar, string value list, or array of them) -> the axis' values.
std::vector<json> toml_values(const ParamAxis& axis, const toml::node& node,
                              const std::string& where) {
  const std::string allowed = axis.kind == ParamAxis::Kind::text
                                  ? join(axis.allowed)
                                  : "integers, strings of " + integer_allowed(axis);
  std::vector<json> values;
  std::set<std::string> seen;  // linear-time dedupe: "1..100000" once took 11 s
  auto one = [&](const toml::node& item) {
    std::vector<json> part;
    if (const auto* integer = item.as_integer())
      part = parse_value_list(axis, std::to_string(integer->get()), where);
    else if (const auto* string = item.as_string())
      part = parse_value_list(axis, string->get(), where);
    else
      throw usage_error(where + ": " + type_name(item) + " is not a value; allowed: " + allowed);
    for (json& value : part)
      if (seen.insert(value.dump()).second) values.push_back(std::move(value));
  };
  if (const auto* array = node.as_array()) {
    if (array->empty()) throw usage_error(where + ": an empty list; allowed: " + allowed);
    for (const toml::node& item : *array) one(item);
  } else {
    one(node);
  }
  return values;
}

// A table of axis keys ([axes] or one [[point]]) -> its product.
std::vector<json> toml_block(const OperatorFamily& family, const toml::table& table,
                             const std::string& path, const std::string& block) {
  AxisValues given;
  for (const auto& [key, node] : table) {
    const std::string name = normalize_key(key.str());
    const ParamAxis* axis = find_axis(family, name);
    if (!axis)
      throw unknown_key(at(path, key.source()) + block + ": ", family, std::string(key.str()),
                        false);
    if (given.count(name))
      throw usage_error(at(path, key.source()) + block + ": " + name +
                        " is given twice (dashes and underscores are the same)");
    given[name] = toml_values(*axis, node, at(path, node.source()) + block + "." + name);
  }
  return product(family, given, at(path, table.source()) + block + ": ");
}

}  // namespace

namespace spec_detail {

// toml++ 3.3 (Debian 12's) reaches __builtin_unreachable() when it asks whether
// some non-ASCII code points are whitespace (U+00A7, U+FEF9, ...; marzer/tomlplusplus
// #190 and #295, fixed upstream by PR 305): undefined behaviour on input, found by
// fuzz/toml_spec. It asks only outside strings and comments, where any such character
// is a syntax error anyway, and in a multi-line basic string after a backslash; those
// cases are refused here before toml++ reads the text.
bool tomlpp_unreachable(char32_t c) {
  if (c < 0xA0 || c > 0xFEFF) return false;
  const std::uint64_t child = (static_cast<std::uint64_t>(c) - 0xA0) / 0x3FA;  // toml++'s table
  if (((std::uint64_t{1} << child) & 0x7FFFFFFFFFFFF75Eull) != 0) return false;
  return c != 0xA0 && c != 0x3000 && c != 0xFEFF && child != 5 && child != 7;
}

// What toml++ 3.3 skips as whitespace after a line-ending backslash: ASCII
// whitespace and its non-ASCII horizontal and vertical whitespace (U+FEFF among
// them), so the character it then asks about may follow non-ASCII whitespace.
bool tomlpp_whitespace(char32_t c) {
  if (c == ' ' || c == '\t' || (c >= '\n' && c <= '\r')) return true;
  return c == 0xA0 || c == 0x85 || c == 0x1680 || c == 0x180E || (c >= 0x2000 && c <= 0x200B) ||
         (c >= 0x2028 && c <= 0x2029) || c == 0x202F || (c >= 0x205F && c <= 0x2060) ||
         c == 0x3000 || c == 0xFEFF;
}

void refuse_tomlpp_unreachable(std::string_view text, const std::string& path) {
  enum class In { code, comment, basic, literal, multi_basic, multi_literal } in = In::code;
  std::size_t line = 1, column = 1;
  // toml++ reads a value up to a space, ']', '}', ',' or '#' before it judges it: a
  // quote starts a string only where a token starts (after a separator, '[' or '{').
  // Elsewhere the scan stays in code, which is stricter than toml++, never looser.
  bool token_start = true, seen_equals = false;
  const auto starts = [&](std::size_t i, std::string_view what) {
    return text.substr(i, what.size()) == what;
  };
  // The code point at i; U+0000 for an invalid byte (toml++ refuses those itself).
  const auto code_point = [&](std::size_t i) { return decode_utf8(text.substr(i)).code_point; };
  const auto refuse = [&](char32_t c, const char* where) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(c));
    return usage_error(path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                       ": malformed TOML: the character " + hex + " " + where +
                       "; allowed: non-ASCII characters inside strings and comments only");
  };
  for (std::size_t i = 0; i < text.size();) {
    const Utf8Char decoded = decode_utf8(text.substr(i));
    const char32_t c = decoded.code_point;  // U+0000 for an invalid byte
    std::size_t length = decoded.length;
    switch (in) {
      case In::code:
        if (tomlpp_unreachable(c)) throw refuse(c, "outside a string or comment");
        if (c == '#') in = In::comment;
        if (c == '"' && token_start)
          in = starts(i, "\"\"\"") ? (length = 3, In::multi_basic) : In::basic;
        if (c == '\'' && token_start)
          in = starts(i, "'''") ? (length = 3, In::multi_literal) : In::literal;
        if (c == '\n') seen_equals = false;
        // '=' separates a key from its value once a line; a second one is inside a value.
        if (c < 0x80 && c != 0 && std::strchr(" \t\r\n,]}", static_cast<int>(c)) != nullptr)
          token_start = true;
        else if (c == '=' && !seen_equals)
          token_start = true, seen_equals = true;
        else if (c != '[' && c != '{')
          token_start = false;
        if (in != In::code) token_start = false;  // after the string closes
        break;
      case In::comment:
        if (c == '\n') in = In::code;
        break;
      case In::basic:
        if (c == '\\') length += decode_utf8(text.substr(i + 1)).length;  // the escaped character
        if (c == '"' || c == '\n') in = In::code;
        break;
      case In::literal:
        if (c == '\'' || c == '\n') in = In::code;
        break;
      case In::multi_basic:
        if (c == '\\') {  // an escape, or a line-ending backslash and the whitespace after it
          std::size_t next = i + 1;
          while (next < text.size() && tomlpp_whitespace(code_point(next)))
            next += decode_utf8(text.substr(next)).length;
          if (next < text.size() && tomlpp_unreachable(code_point(next)))
            throw refuse(code_point(next), "after a backslash in a multi-line string");
          if (next == i + 1 && next < text.size()) length += decode_utf8(text.substr(next)).length;
        } else if (starts(i, "\"\"\"")) {
          length = 3;
          while (length < 5 && starts(i + length, "\"")) ++length;  // """"" ends with two quotes
          in = In::code;
        }
        break;
      case In::multi_literal:
        if (starts(i, "'''")) {
          length = 3;
          while (length < 5 && starts(i + length, "'")) ++length;
          in = In::code;
        }
        break;
    }
    for (std::size_t k = i; k < i + length && k < text.size(); ++k) {
      if (text[k] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<unsigned char>(text[k]) & 0xC0) != 0x80) {
        ++column;
      }
    }
    i += length;
  }
}

toml::table parse_toml(const std::string& text, const std::string& path) {
  refuse_tomlpp_unreachable(text, path);
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& error) {
    throw usage_error(at(path, error.source()) +
                      "malformed TOML: " + std::string(error.description()));
  }
}

std::string read_toml_file(const std::string& path, const std::string& what) {
  // A FIFO would block the read forever, a device never end: refuse both.
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw usage_error("the " + what + " '" + path +
                      "' is not a regular file (a directory, FIFO or device); pass a .toml file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw usage_error("cannot read the " + what + " '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace spec_detail

SweepSpec spec_from_toml(const std::string& path, const FamilyLookup& lookup) {
  return spec_from_toml_text(read_toml_file(path, "sweep spec"), path, lookup);
}

SweepSpec spec_from_toml_text(const std::string& text, const std::string& path,
                              const FamilyLookup& lookup) {
  const toml::table root = parse_toml(text, path);
  const toml::table* sweep = nullptr;
  const toml::table* axes = nullptr;
  const toml::array* blocks = nullptr;
  for (const auto& [key, node] : root) {
    const std::string where = at(path, key.source());
    if (key == "sweep" && node.is_table()) {
      sweep = node.as_table();
    } else if (key == "axes" && node.is_table()) {
      axes = node.as_table();
    } else if (key == "point" && node.is_array_of_tables()) {
      blocks = node.as_array();
    } else if (key == "sweep" || key == "axes" || key == "point") {
      throw usage_error(where + std::string(key.str()) + " is " + type_name(node) +
                        "; allowed: [sweep] and [axes] tables, [[point]] tables");
    } else {
      throw usage_error(where + "unknown key '" + std::string(key.str()) +
                        "'; allowed: [sweep], [axes], [[point]]");
    }
  }
  if (!sweep)
    throw usage_error(path +
                      ": no [sweep] table; allowed: a [sweep] table with family = "
                      "\"conv2d\" (or another family)");
  Options options;
  const toml::node* family_node = nullptr;
  for (const auto& [raw_key, node] : *sweep) {
    const std::string key = normalize_key(raw_key.str());
    const std::string where = at(path, raw_key.source());
    if (key != "family" && std::find(kOptions.begin(), kOptions.end(), key) == kOptions.end())
      throw usage_error(where + "[sweep]: unknown key '" + std::string(raw_key.str()) +
                        "'; allowed: family, " + join(kOptions));
    if (key == "metrics" && node.is_array()) {
      for (const toml::node& item : *node.as_array()) {
        if (!item.is_string())
          throw usage_error(at(path, item.source()) + "[sweep] metrics holds " + type_name(item) +
                            "; allowed: strings (metric names)");
        apply_option(options, key, item.as_string()->get(), at(path, item.source()) + "[sweep] ");
      }
      continue;
    }
    if (!node.is_string())
      throw usage_error(
          at(path, node.source()) + "[sweep] " + key + " is " + type_name(node) +
          (key == "metrics" ? "; allowed: a string or a list of strings" : "; allowed: a string"));
    if (key == "family")
      family_node = &node;
    else
      apply_option(options, key, node.as_string()->get(), at(path, node.source()) + "[sweep] ");
  }
  if (!family_node)
    throw usage_error(at(path, sweep->source()) +
                      "[sweep] has no family; allowed: family = \"conv2d\" (or another family)");
  const OperatorFamily* family = nullptr;
  try {
    family = &lookup(family_node->as_string()->get());
  } catch (const Error& error) {
    throw usage_error(at(path, family_node->source()) + "[sweep] family: " + error.what());
  }

  PointList list;
  if (axes) {
    const std::string origin = at(path, axes->source()) + "[axes] ";
    for (json& point : toml_block(*family, *axes, path, "[axes]"))
      list.add(std::move(point), origin);
  }
  if (blocks) {
    std::size_t n = 0;
    for (const toml::node& node : *blocks) {
      const toml::table& table = *node.as_table();
      const std::string block = "[[point]] #" + std::to_string(++n);
      const std::string origin = at(path, table.source()) + block + " ";
      for (json& point : toml_block(*family, table, path, block))
        list.add(std::move(point), origin);
    }
  }
  if (!axes && !blocks) list.add(baseline_point(*family), path + ": ");
  if (list.points.size() > kMaxSweepPoints)
    throw usage_error(path + ": " + std::to_string(list.points.size()) +
                      " points; allowed: at most " + std::to_string(kMaxSweepPoints));
  // The file's name may hold any bytes; the run stores UTF-8 text (toml++ has
  // checked the text itself).
  return make_spec(*family, options, std::move(list),
                   replace_invalid_utf8(std::filesystem::path(path).stem().string()),
                   {{"kind", "toml"}, {"path", replace_invalid_utf8(path)}, {"text", text}});
}

}  // namespace timeroof
