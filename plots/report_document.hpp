// The report as a document model: a list of blocks (headings, paragraphs,
// lists, tables, charts) that the sections build once (report_sections.hpp) and
// two renderers write out, as HTML (report_html.cpp) and as Markdown
// (report_markdown.cpp). Internal to plots/; not a public interface.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "plots/report.hpp"

namespace timeroof::plots::detail {

struct Block {
  // contents: the table of contents, a link to each heading of level 2 and 3
  // with an id, written by the renderers from the headings themselves.
  // note: a paragraph set apart, a banner (HTML: boxed; Markdown: a quote)
  enum class Kind { heading, paragraph, list, table, chart, contents, note } kind = Kind::paragraph;
  int level = 2;                   // heading
  std::string id;                  // heading anchor
  std::string text;                // heading, paragraph, note (plain text, escaped when rendered)
  std::vector<std::string> items;  // list
  bool ordered = false;
  // list: per item, the heading id it links to (after its text, as `link_text`);
  // empty, or "" for an item without a link
  std::vector<std::string> links;
  std::string link_text;
  std::vector<std::string> header;  // table
  std::vector<std::vector<std::string>> rows;
  std::string row_class;  // table: class of every body row
  // table: columns never wrapped (numbers, short labels); the others wrap between
  // words, and long words between their parts (report_html.cpp)
  std::vector<std::size_t> nowrap;
  std::string caption;  // table, chart
  std::string svg;      // chart
  std::string file;     // chart: file name next to report.md
};

Block heading(int level, const std::string& text, const std::string& id = {});
Block paragraph(const std::string& text);
Block note(const std::string& text);
Block list(std::vector<std::string> items, bool ordered);
Block table(std::vector<std::string> header, std::vector<std::vector<std::string>> rows,
            const std::string& row_class = {}, const std::string& caption = {});
Block chart(std::string svg, const std::string& file, const std::string& caption);
Block contents();
// Whether the table of contents lists `b`: a heading of level 2 or 3 with an id.
bool in_contents(const Block& b);

// Text for Markdown (CommonMark, as GitHub renders it): each character that
// would open markup backslash-escaped, the rest as written, so report.md reads
// as the text itself ("the series' time", "a < b", "hbm_read"): \ ` * [ ] ~
// always; _ unless inside a word (where it opens no emphasis); < before a
// letter, / ! or ? (a tag or an autolink); & before what reads as an entity;
// > at the start, # - + there before a space or their twin, and the . or ) of
// a leading number before a space (a quote, heading, list or rule). Newlines as spaces; what markup
// cannot hold as U+FFFD (clean_text).
std::string markdown_text(const std::string& text);

// The self-contained HTML page: inline CSS and SVG, every text escaped.
std::string render_html(const std::vector<Block>& blocks);
// The Markdown document, its charts referenced as `format` files next to it.
// Links to a heading's id point at the anchor GitHub gives the heading
// (markdown_anchors), so the table of contents works where report.md is shown.
std::string render_markdown(const std::vector<Block>& blocks, ChartFormat format);
// Per heading id, the anchor GitHub's Markdown gives that heading: its text in
// lower case, without punctuation but - and _, spaces as -, "-1", "-2" after
// repeats (every heading counts, with or without an id).
std::vector<std::pair<std::string, std::string>> markdown_anchors(const std::vector<Block>& blocks);
// A chart's file name with the extension of `format` ("x.svg" -> "x.png").
std::string chart_file(const std::string& svg_file, ChartFormat format);

// Creates `dir` and writes each (file name, text) into it, all or none: a usage
// error naming the path, the system's reason and the fix when one cannot be
// written, with those written removed. The last file is renamed into place last.
void write_report_files(const std::string& dir,
                        const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace timeroof::plots::detail
