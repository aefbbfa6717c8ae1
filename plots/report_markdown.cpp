// The report's Markdown renderer: the same blocks as the HTML page, text
// Markdown-escaped (markdown_text), charts as files next to report.md.
#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "plots/report_document.hpp"
#include "plots/svg.hpp"

namespace timeroof::plots::detail {

namespace {

bool word_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || u >= 0x80;  // a UTF-8 byte: part of a word, as CommonMark reads it
}
// Whether `text` at `at` reads as the rest of an entity after '&' ("amp;", "#96;").
bool entity_after(const std::string& text, std::size_t at) {
  std::size_t end = at;
  if (end < text.size() && text[end] == '#') ++end;
  const std::size_t first = end;
  while (end < text.size() && end - at < 32 && std::isalnum(static_cast<unsigned char>(text[end])))
    ++end;
  return end > first && end < text.size() && text[end] == ';';
}
// Whether text[at] ends a run of digits that starts the text ("12." opens a list).
bool ends_leading_number(const std::string& text, std::size_t at) {
  return at > 0 && std::all_of(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at),
                               [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// A Markdown table cell: markdown_text with | escaped.
std::string md_cell(const std::string& text) {
  std::string out;
  for (char c : markdown_text(text)) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out.empty() ? " " : out;
}

}  // namespace

std::string markdown_text(const std::string& raw) {
  const std::string text = clean_text(raw);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const char prev = i > 0 ? text[i - 1] : ' ';
    const char next = i + 1 < text.size() ? text[i + 1] : ' ';
    bool escaped = false;
    switch (c) {
      case '\\':
      case '`':
      case '*':
      case '[':
      case ']':
      case '~':
        escaped = true;
        break;
      case '_':
        escaped = !(word_byte(prev) && word_byte(next));
        break;
      case '<':
        escaped = std::isalpha(static_cast<unsigned char>(next)) || next == '/' || next == '!' ||
                  next == '?';
        break;
      case '&':
        escaped = entity_after(text, i + 1);
        break;
      case '>':
        escaped = i == 0;
        break;
      case '#':
      case '-':
      case '+':
        escaped = i == 0 && (next == ' ' || next == c);  // a heading, a list, a rule
        break;
      case '.':
      case ')':
        escaped = next == ' ' && ends_leading_number(text, i);
        break;
      case '\n':
      case '\r':
        out += ' ';
        continue;
      default:
        break;
    }
    if (escaped) out += '\\';
    out += c;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> markdown_anchors(
    const std::vector<Block>& blocks) {
  std::vector<std::pair<std::string, std::string>> out;
  std::map<std::string, int> seen;
  for (const Block& b : blocks) {
    if (b.kind != Block::Kind::heading) continue;
    std::string slug;
    for (const char c : clean_text(b.text)) {
      const auto u = static_cast<unsigned char>(c);
      if (std::isalnum(u) || u >= 0x80 || c == '-' || c == '_')
        slug += static_cast<char>(std::tolower(u));
      else if (c == ' ')
        slug += '-';
    }
    const int repeat = seen[slug]++;
    if (repeat > 0) slug += "-" + std::to_string(repeat);
    if (!b.id.empty()) out.emplace_back(b.id, slug);
  }
  return out;
}

std::string chart_file(const std::string& svg_file, ChartFormat format) {
  if (format == ChartFormat::svg) return svg_file;
  const std::size_t dot = svg_file.rfind('.');
  return svg_file.substr(0, dot) + "." + to_string(format);
}

std::string render_markdown(const std::vector<Block>& blocks, ChartFormat format) {
  const std::vector<std::pair<std::string, std::string>> anchors = markdown_anchors(blocks);
  auto link = [&anchors](const std::string& id, const std::string& text) {
    std::string target = id;
    for (const auto& [heading, slug] : anchors)
      if (heading == id) target = slug;
    return "[" + markdown_text(text) + "](#" + target + ")";
  };
  std::ostringstream out;
  for (const Block& b : blocks) {
    switch (b.kind) {
      case Block::Kind::heading:
        out << std::string(static_cast<std::size_t>(b.level), '#') << ' ' << markdown_text(b.text)
            << "\n\n";
        break;
      case Block::Kind::paragraph:
        out << markdown_text(b.text) << "\n\n";
        break;
      case Block::Kind::note:
        out << "> " << markdown_text(b.text) << "\n\n";
        break;
      case Block::Kind::list: {
        int n = 0;
        for (std::size_t i = 0; i < b.items.size(); ++i) {
          if (b.ordered)
            out << ++n << ". ";
          else
            out << "- ";
          out << markdown_text(b.items[i]);
          if (i < b.links.size() && !b.links[i].empty())
            out << ' ' << link(b.links[i], b.link_text);
          out << '\n';
        }
        out << '\n';
        break;
      }
      case Block::Kind::table:
        if (!b.caption.empty()) out << '*' << markdown_text(b.caption) << "*\n\n";
        out << '|';
        for (const std::string& h : b.header) out << ' ' << md_cell(h) << " |";
        out << "\n|";
        for (std::size_t i = 0; i < b.header.size(); ++i) out << "---|";
        out << '\n';
        for (const auto& row : b.rows) {
          out << '|';
          for (const std::string& cell : row) out << ' ' << md_cell(cell) << " |";
          out << '\n';
        }
        out << '\n';
        break;
      case Block::Kind::contents:
        for (const Block& h : blocks)
          if (in_contents(h)) out << (h.level == 3 ? "  - " : "- ") << link(h.id, h.text) << '\n';
        out << '\n';
        break;
      case Block::Kind::chart:
        out << "![" << markdown_text(b.caption) << "](" << chart_file(b.file, format) << ")\n\n";
        break;
    }
  }
  return out.str();
}

}  // namespace timeroof::plots::detail
