// The report's Markdown renderer: the same blocks as the HTML page, text
// HTML-escaped (renderers pass HTML through), charts as files next to report.md.
#include <sstream>

#include "plots/report_document.hpp"
#include "plots/svg.hpp"

namespace timeroof::plots::detail {

namespace {

// Markdown text: HTML-escaped (renderers pass HTML through), backticks as an
// entity (no code spans opened by the data), newlines as spaces.
std::string md_text(const std::string& text) {
  std::string out;
  for (char c : escape(text)) {
    if (c == '`')
      out += "&#96;";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}
// A Markdown table cell: md_text with | escaped.
std::string md_cell(const std::string& text) {
  std::string out;
  for (char c : md_text(text)) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out.empty() ? " " : out;
}

}  // namespace

std::string chart_file(const std::string& svg_file, ChartFormat format) {
  if (format == ChartFormat::svg) return svg_file;
  const std::size_t dot = svg_file.rfind('.');
  return svg_file.substr(0, dot) + "." + to_string(format);
}

std::string render_markdown(const std::vector<Block>& blocks, ChartFormat format) {
  std::ostringstream out;
  for (const Block& b : blocks) {
    switch (b.kind) {
      case Block::Kind::heading:
        out << std::string(static_cast<std::size_t>(b.level), '#') << ' ' << md_text(b.text)
            << "\n\n";
        break;
      case Block::Kind::paragraph:
        out << md_text(b.text) << "\n\n";
        break;
      case Block::Kind::list: {
        int n = 0;
        for (const std::string& item : b.items) {
          if (b.ordered)
            out << ++n << ". ";
          else
            out << "- ";
          out << md_text(item) << '\n';
        }
        out << '\n';
        break;
      }
      case Block::Kind::table:
        if (!b.caption.empty()) out << '*' << md_text(b.caption) << "*\n\n";
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
      case Block::Kind::chart:
        out << "![" << md_text(b.caption) << "](" << chart_file(b.file, format) << ")\n\n";
        break;
    }
  }
  return out.str();
}

}  // namespace timeroof::plots::detail
