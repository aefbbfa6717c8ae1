// The report's HTML renderer: one self-contained page (inline CSS and SVG, no
// script, nothing fetched), every text from the data escaped.
#include <algorithm>
#include <sstream>

#include "plots/report_document.hpp"
#include "plots/svg.hpp"

namespace timeroof::plots::detail {

namespace {

// The SVG document without its XML declaration, for inlining into HTML.
std::string inline_svg(const std::string& svg) {
  const std::size_t start = svg.find("<svg");
  return start == std::string::npos ? svg : svg.substr(start);
}

const char* const kCss = R"(body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;color:#222;
max-width:1100px;margin:0 auto;padding:16px 24px;line-height:1.4;font-size:15px}
h1{font-size:26px;border-bottom:2px solid #333;padding-bottom:4px}
h2{font-size:22px;margin-top:36px;border-bottom:1px solid #999}
h3{font-size:18px;margin-top:28px}h4{font-size:15px;margin-top:20px}
table{border-collapse:collapse;font-size:11px;margin:8px 0 16px;width:100%}
th,td{border:1px solid #ccc;padding:2px 5px;text-align:left;vertical-align:top;
overflow-wrap:anywhere}th,td.w{overflow-wrap:break-word}td.n{white-space:nowrap}
th{background:#eee}tr:nth-child(even) td{background:#f8f8f8}
caption{text-align:left;font-size:12px;color:#555;padding:2px 0}
figure{margin:12px 0 20px}figure svg{width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#555}
code{font-size:12px;overflow-wrap:anywhere}
ol.findings li{margin-bottom:4px}
@media print{body{max-width:none}figure,table{break-inside:auto}
figure{break-inside:avoid}h2,h3{break-after:avoid}thead{display:table-header-group}}
@media print,(max-width:820px){body{padding:8px 6px;font-size:13px}
table{font-size:7.5pt;line-height:1.25}th,td{padding:1px 2px}th{font-weight:normal}}
@page{size:A4;margin:12mm 10mm}
)";

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
      case Block::Kind::list: {
        const char* tag = b.ordered ? "ol" : "ul";
        out << '<' << tag << (b.ordered ? " class=\"findings\"" : "") << ">\n";
        for (const std::string& item : b.items) out << "<li>" << escape(item) << "</li>\n";
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
            const bool w = std::find(b.words.begin(), b.words.end(), i) != b.words.end();
            out << (n   ? "<td class=\"n\">"
                    : w ? "<td class=\"w\">"
                        : "<td>")
                << escape(row[i]) << "</td>";
          }
          out << "</tr>\n";
        }
        out << "</tbody>\n</table>\n";
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
