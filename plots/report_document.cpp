#include "plots/report_document.hpp"

#include <utility>

namespace timeroof::plots::detail {

Block heading(int level, const std::string& text, const std::string& id) {
  Block b;
  b.kind = Block::Kind::heading;
  b.level = level;
  b.text = text;
  b.id = id;
  return b;
}
Block paragraph(const std::string& text) {
  Block b;
  b.kind = Block::Kind::paragraph;
  b.text = text;
  return b;
}
Block note(const std::string& text) {
  Block b = paragraph(text);
  b.kind = Block::Kind::note;
  return b;
}
Block list(std::vector<std::string> items, bool ordered) {
  Block b;
  b.kind = Block::Kind::list;
  b.items = std::move(items);
  b.ordered = ordered;
  return b;
}
Block table(std::vector<std::string> header, std::vector<std::vector<std::string>> rows,
            const std::string& row_class, const std::string& caption) {
  Block b;
  b.kind = Block::Kind::table;
  b.header = std::move(header);
  b.rows = std::move(rows);
  b.row_class = row_class;
  b.caption = caption;
  return b;
}
Block chart(std::string svg, const std::string& file, const std::string& caption) {
  Block b;
  b.kind = Block::Kind::chart;
  b.svg = std::move(svg);
  b.file = file;
  b.caption = caption;
  return b;
}

bool in_contents(const Block& b) {
  return b.kind == Block::Kind::heading && !b.id.empty() && (b.level == 2 || b.level == 3);
}
Block contents() {
  Block b;
  b.kind = Block::Kind::contents;
  return b;
}

}  // namespace timeroof::plots::detail
