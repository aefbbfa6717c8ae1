// The report's HTML renderer: one self-contained page (inline CSS and SVG, no
// script, nothing fetched), every text from the data escaped.
#include <algorithm>
#include <sstream>
#include <string_view>
#include <vector>

#include "plots/report_document.hpp"
#include "plots/svg.hpp"

namespace timeroof::plots::detail {

namespace {

// The SVG document without its XML declaration, for inlining into HTML.
std::string inline_svg(const std::string& svg) {
  const std::size_t start = svg.find("<svg");
  return start == std::string::npos ? svg : svg.substr(start);
}

// Table cells break no word (overflow-wrap:break-word in the CSS), so an
// identifier never breaks mid-word ("hbm_r ead"). A word over kWholeWord
// characters gets break opportunities (<wbr/>) between the names it is made of:
// after / , ( = : and before <, as in "direction=bwd_filter",
// "compute_bound(tensor_core)" or a kernel's template arguments; a part still
// over kLongestPart characters also after _ and -, and every kLongestPart
// characters where it has none. Roof names ("hbm_read", "tensor_bf16_mma_sync")
// stay whole, and the point tables still fit A4.
constexpr std::size_t kWholeWord = 12;
constexpr std::size_t kLongestPart = 24;

bool name_separator(char c) {
  return c == '/' || c == ',' || c == '(' || c == '=' || c == ':';
}
bool part_separator(char c) {
  return c == '_' || c == '-';
}
bool utf8_lead(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
}
std::size_t characters(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), utf8_lead));
}

// `text` split after each character `after` accepts and before each `before`
// accepts, never into empty pieces nor inside a UTF-8 sequence.
template <typename After, typename Before>
std::vector<std::string_view> split_word(std::string_view text, After after, Before before) {
  std::vector<std::string_view> pieces;
  std::size_t start = 0;
  for (std::size_t k = 0; k < text.size(); ++k) {
    if (k > start && before(text[k])) {
      pieces.push_back(text.substr(start, k - start));
      start = k;
    }
    if (after(text[k]) && k + 1 < text.size()) {
      pieces.push_back(text.substr(start, k + 1 - start));
      start = k + 1;
    }
  }
  pieces.push_back(text.substr(start));
  return pieces;
}

// A long word, escaped, with <wbr/> between its names (see kWholeWord).
std::string breakable_word(std::string_view word) {
  std::vector<std::string_view> pieces;
  for (std::string_view name : split_word(word, name_separator, [](char c) { return c == '<'; })) {
    if (characters(name) <= kLongestPart) {
      pieces.push_back(name);
      continue;
    }
    for (std::string_view part : split_word(name, part_separator, [](char) { return false; })) {
      std::size_t start = 0, count = 0;
      for (std::size_t k = 0; k < part.size(); ++k) {
        if (!utf8_lead(part[k])) continue;
        if (count == kLongestPart) {
          pieces.push_back(part.substr(start, k - start));
          start = k;
          count = 0;
        }
        ++count;
      }
      pieces.push_back(part.substr(start));
    }
  }
  std::string out;
  for (std::size_t i = 0; i < pieces.size(); ++i) out += (i ? "<wbr/>" : "") + escape(pieces[i]);
  return out;
}

// A table cell's text, escaped, its long words breakable between their parts.
std::string cell_text(std::string_view text) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find_first_of(" \t\n", at), text.size());
    const std::string_view word = text.substr(at, end - at);
    out += characters(word) <= kWholeWord ? escape(word) : breakable_word(word);
    if (end < text.size()) out += text[end];
    at = end + 1;
  }
  return out;
}

const char* const kCss = R"(body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;color:#222;
max-width:1100px;margin:0 auto;padding:16px 24px;line-height:1.4;font-size:15px}
h1{font-size:26px;border-bottom:2px solid #333;padding-bottom:4px}
h2{font-size:22px;margin-top:36px;border-bottom:1px solid #999}
h3{font-size:18px;margin-top:28px}h4{font-size:15px;margin-top:20px}
table{border-collapse:collapse;font-size:11px;margin:8px 0 16px;width:100%}
th,td{border:1px solid #ccc;padding:2px 5px;text-align:left;vertical-align:top;
overflow-wrap:break-word}td.n{white-space:nowrap}
th{background:#eee}tr:nth-child(even) td{background:#f8f8f8}
caption{text-align:left;font-size:12px;color:#555;padding:2px 0}
figure{margin:12px 0 20px}figure svg{width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#555}
code{font-size:12px;overflow-wrap:anywhere}
ol.findings li{margin-bottom:4px}
p.note{border:2px solid #b35900;background:#fff3e0;padding:8px 12px;font-weight:bold}
.toc ul{margin:4px 0;padding-left:22px}
@media print{body{max-width:none}figure,table{break-inside:auto}
figure{break-inside:avoid}h2,h3{break-after:avoid}thead{display:table-header-group}}
@media print,(max-width:820px){body{padding:8px 6px;font-size:13px}
table{font-size:7.5pt;line-height:1.25}th,td{padding:1px 2px}th{font-weight:normal}}
@page{size:A4;margin:12mm 10mm}
)";

std::string link(const std::string& id, const std::string& text) {
  return "<a href=\"#" + escape(id) + "\">" + escape(text) + "</a>";
}

// Nested lists: the level-3 headings under the level-2 heading before them.
void write_contents(std::ostringstream& out, const std::vector<Block>& blocks) {
  out << "<div class=\"toc\">\n<ul>\n";
  bool nested = false, open_item = false;
  for (const Block& b : blocks) {
    if (!in_contents(b)) continue;
    const Block* h = &b;
    if (h->level == 3 && open_item && !nested) {
      out << "\n<ul>\n";
      nested = true;
    } else if (h->level == 2) {
      if (nested) out << "</ul>\n";
      if (open_item) out << "</li>\n";
      nested = open_item = false;
    }
    if (h->level == 2 || !open_item) {
      out << "<li>" << link(h->id, h->text);
      open_item = h->level == 2;
      if (!open_item) out << "</li>\n";
    } else {
      out << "<li>" << link(h->id, h->text) << "</li>\n";
    }
  }
  if (nested) out << "</ul>\n";
  if (open_item) out << "</li>\n";
  out << "</ul>\n</div>\n";
}

}  // namespace

std::string render_html(const std::vector<Block>& blocks) {
  // The page's title is its first top-level heading (the run report's and the
  // compare report's differ).
  std::string title = "timeroof report";
  for (const Block& b : blocks)
    if (b.kind == Block::Kind::heading && b.level == 1) {
      title = b.text;
      break;
    }
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
         "<title>"
      << escape(title) << "</title>\n<style>\n"
      << kCss << "</style>\n</head>\n<body>\n";
  for (const Block& b : blocks) {
    switch (b.kind) {
      case Block::Kind::heading:
        out << "<h" << b.level;
        if (!b.id.empty()) out << " id=\"" << escape(b.id) << '"';
        out << '>' << escape(b.text) << "</h" << b.level << ">\n";
        break;
      case Block::Kind::paragraph:
        out << "<p>" << escape(b.text) << "</p>\n";
        break;
      case Block::Kind::note:
        out << "<p class=\"note\">" << escape(b.text) << "</p>\n";
        break;
      case Block::Kind::list: {
        const char* tag = b.ordered ? "ol" : "ul";
        out << '<' << tag << (b.ordered ? " class=\"findings\"" : "") << ">\n";
        for (std::size_t i = 0; i < b.items.size(); ++i) {
          out << "<li>" << escape(b.items[i]);
          if (i < b.links.size() && !b.links[i].empty())
            out << ' ' << link(b.links[i], b.link_text);
          out << "</li>\n";
        }
        out << "</" << tag << ">\n";
        break;
      }
      case Block::Kind::table:
        out << "<table>\n";
        if (!b.caption.empty()) out << "<caption>" << escape(b.caption) << "</caption>\n";
        out << "<thead><tr>";
        for (const std::string& h : b.header) out << "<th>" << escape(h) << "</th>";
        out << "</tr></thead>\n<tbody>\n";
        for (const auto& row : b.rows) {
          out << "<tr";
          if (!b.row_class.empty()) out << " class=\"" << escape(b.row_class) << '"';
          out << '>';
          for (std::size_t i = 0; i < row.size(); ++i) {
            const bool n = std::find(b.nowrap.begin(), b.nowrap.end(), i) != b.nowrap.end();
            out << (n ? "<td class=\"n\">" : "<td>") << cell_text(row[i]) << "</td>";
          }
          out << "</tr>\n";
        }
        out << "</tbody>\n</table>\n";
        break;
      case Block::Kind::contents:
        write_contents(out, blocks);
        break;
      case Block::Kind::chart:
        out << "<figure>\n" << inline_svg(b.svg);
        if (!b.caption.empty()) out << "<figcaption>" << escape(b.caption) << "</figcaption>\n";
        out << "</figure>\n";
        break;
    }
  }
  out << "</body>\n</html>\n";
  return out.str();
}

}  // namespace timeroof::plots::detail
