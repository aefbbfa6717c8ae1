// A small SVG writer: the charts of plots/ write their SVG text through it, with
// no third-party drawing library. Every piece of text and every attribute value
// is XML-escaped (&, <, >, ", ') and cleared of what XML cannot hold: kernel
// and operator names are templated C++ names, and names come from imported
// files. Coordinates are written with at most two decimals.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace timeroof::plots {

// U+FFFD in UTF-8: what escape() writes for what markup cannot hold.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";
// `text` with &, <, >, " and ' replaced by their XML entities, and each code
// point XML or HTML does not allow (controls but tab and line breaks, U+FFFE,
// U+FFFF, noncharacters) and each byte that is not UTF-8 replaced by U+FFFD:
// the result is always well-formed as text and as an attribute value.
std::string escape(std::string_view text);
// `text` cleared as escape() clears it, without entities: for formats whose
// escaping is their own (Markdown, plots/report_markdown.cpp).
std::string clean_text(std::string_view text);
// A coordinate or length: at most two decimals, trailing zeros dropped, "0" for
// a non-finite value.
std::string num(double value);

struct Style {
  std::string stroke = "none";
  std::string fill = "none";
  double stroke_width = 1;
  std::string dash;    // stroke-dasharray, e.g. "6 3"; empty: solid
  double opacity = 1;  // applies to the whole element
};

enum class Anchor { start, middle, end };

struct TextStyle {
  double size = 12;
  Anchor anchor = Anchor::start;
  std::string fill = "#222222";
  bool bold = false;
  double rotate = 0;     // degrees, about the text's anchor point
  bool halo = false;     // white outline behind the glyphs (labels over lines)
  std::string baseline;  // dominant-baseline, e.g. "middle"; empty: alphabetic
};

enum class Marker { circle, square, diamond, triangle_up, triangle_down, cross, plus };
const char* to_string(Marker marker);

using XY = std::pair<double, double>;

class Svg {
 public:
  Svg(double width, double height);

  double width() const { return width_; }
  double height() const { return height_; }

  void line(double x1, double y1, double x2, double y2, const Style& style);
  void polyline(const std::vector<XY>& points, const Style& style);
  // A closed shape through `points` (e.g. an interval band).
  void polygon(const std::vector<XY>& points, const Style& style);
  void rect(double x, double y, double w, double h, const Style& style);
  void circle(double cx, double cy, double r, const Style& style);
  // A marker of `size` pixels (its bounding box) centred on (x, y).
  void marker(Marker shape, double x, double y, double size, const Style& style);
  void text(double x, double y, std::string_view content, const TextStyle& style);
  // <g> with an optional <title> (the hover tooltip) and class; nest freely.
  void begin_group(std::string_view title = {}, std::string_view css_class = {});
  void end_group();
  // Raw markup written as is (the caller escapes).
  void raw(std::string_view markup);

  // The complete document; closes groups left open.
  std::string str() const;

 private:
  static std::string attributes(const Style& style);
  double width_;
  double height_;
  int open_groups_ = 0;
  std::string body_;
};

}  // namespace timeroof::plots
