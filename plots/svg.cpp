#include "plots/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/format.hpp"

namespace timeroof::plots {

namespace {

// XML 1.0's Char production, less what HTML calls a parse error (C1 controls,
// DEL, noncharacters): the one document is read as both.
bool markup_char(char32_t c) {
  if (c < 0x20) return c == '\t' || c == '\n' || c == '\r';
  if (c >= 0x7F && c <= 0x9F) return false;
  if (c >= 0xFDD0 && c <= 0xFDEF) return false;
  if ((c & 0xFFFE) == 0xFFFE) return false;  // U+FFFE, U+FFFF and their twins in every plane
  return true;
}

// Each code point of `text` that markup can hold, through `entity` (which
// appends a replacement and returns true, or returns false to keep the
// character); every other code point and each byte that is not UTF-8 as U+FFFD.
template <typename Entity>
std::string clean(std::string_view text, Entity entity) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    if (entity(text[at], out)) {
      ++at;
      continue;
    }
    const Utf8Char u = decode_utf8(text.substr(at));
    if (u.valid && markup_char(u.code_point))
      out.append(text.substr(at, u.length));
    else
      out += kReplacementCharacter;
    at += u.length;
  }
  return out;
}

}  // namespace

std::string escape(std::string_view text) {
  return clean(text, [](char c, std::string& out) {
    switch (c) {
      case '&':
        out += "&amp;";
        return true;
      case '<':
        out += "&lt;";
        return true;
      case '>':
        out += "&gt;";
        return true;
      case '"':
        out += "&quot;";
        return true;
      case '\'':
        out += "&apos;";
        return true;
      default:
        return false;
    }
  });
}

std::string clean_text(std::string_view text) {
  return clean(text, [](char, std::string&) { return false; });
}

std::string num(double value) {
  if (!std::isfinite(value)) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", value);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

const char* to_string(Marker marker) {
  switch (marker) {
    case Marker::circle:
      return "circle";
    case Marker::square:
      return "square";
    case Marker::diamond:
      return "diamond";
    case Marker::triangle_up:
      return "triangle_up";
    case Marker::triangle_down:
      return "triangle_down";
    case Marker::cross:
      return "cross";
    case Marker::plus:
      return "plus";
  }
  return "?";
}

Svg::Svg(double width, double height) : width_(width), height_(height) {}

std::string Svg::attributes(const Style& style) {
  std::string a = " stroke=\"" + escape(style.stroke) + "\" fill=\"" + escape(style.fill) + "\"";
  if (style.stroke != "none") a += " stroke-width=\"" + num(style.stroke_width) + "\"";
  if (!style.dash.empty()) a += " stroke-dasharray=\"" + escape(style.dash) + "\"";
  if (style.opacity < 1) a += " opacity=\"" + num(style.opacity) + "\"";
  return a;
}

void Svg::line(double x1, double y1, double x2, double y2, const Style& style) {
  body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
           num(y2) + "\"" + attributes(style) + "/>\n";
}

namespace {
std::string points_text(const std::vector<XY>& points) {
  std::string pts;
  for (const XY& p : points) {
    if (!pts.empty()) pts += ' ';
    pts += num(p.first) + "," + num(p.second);
  }
  return pts;
}
}  // namespace

void Svg::polyline(const std::vector<XY>& points, const Style& style) {
  if (points.empty()) return;
  body_ += "<polyline points=\"" + points_text(points) + "\"" + attributes(style) +
           " stroke-linejoin=\"round\"/>\n";
}

void Svg::polygon(const std::vector<XY>& points, const Style& style) {
  if (points.empty()) return;
  body_ += "<polygon points=\"" + points_text(points) + "\"" + attributes(style) +
           " stroke-linejoin=\"round\"/>\n";
}

void Svg::rect(double x, double y, double w, double h, const Style& style) {
  body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(0.0, w)) +
           "\" height=\"" + num(std::max(0.0, h)) + "\"" + attributes(style) + "/>\n";
}

void Svg::circle(double cx, double cy, double r, const Style& style) {
  body_ += "<circle cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" + num(r) + "\"" +
           attributes(style) + "/>\n";
}

namespace {

// A marker drawn with lines (cross, plus): stroked in the fill colour where it
// has no stroke, never filled, at least 1.5 px wide.
Style lines_only(const Style& style) {
  Style s = style;
  if (s.stroke == "none") s.stroke = s.fill;
  s.fill = "none";
  s.stroke_width = std::max(1.5, style.stroke_width);
  return s;
}

}  // namespace

void Svg::marker(Marker shape, double x, double y, double size, const Style& style) {
  const double h = size / 2;
  auto polygon = [&](const std::vector<XY>& pts) {
    std::string s;
    for (const XY& p : pts) {
      if (!s.empty()) s += ' ';
      s += num(p.first) + "," + num(p.second);
    }
    body_ += "<polygon points=\"" + s + "\"" + attributes(style) + "/>\n";
  };
  switch (shape) {
    case Marker::circle:
      circle(x, y, h, style);
      break;
    case Marker::square:
      rect(x - h * 0.85, y - h * 0.85, size * 0.85, size * 0.85, style);
      break;
    case Marker::diamond:
      polygon({{x, y - h}, {x + h, y}, {x, y + h}, {x - h, y}});
      break;
    case Marker::triangle_up:
      polygon({{x, y - h}, {x + h, y + h * 0.8}, {x - h, y + h * 0.8}});
      break;
    case Marker::triangle_down:
      polygon({{x, y + h}, {x + h, y - h * 0.8}, {x - h, y - h * 0.8}});
      break;
    case Marker::cross:
      line(x - h, y - h, x + h, y + h, lines_only(style));
      line(x - h, y + h, x + h, y - h, lines_only(style));
      break;
    case Marker::plus:
      line(x - h, y, x + h, y, lines_only(style));
      line(x, y - h, x, y + h, lines_only(style));
      break;
  }
}

void Svg::text(double x, double y, std::string_view content, const TextStyle& style) {
  std::string t = "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(style.size) +
                  "\" fill=\"" + escape(style.fill) + "\"";
  if (style.anchor == Anchor::middle) t += " text-anchor=\"middle\"";
  if (style.anchor == Anchor::end) t += " text-anchor=\"end\"";
  if (style.bold) t += " font-weight=\"bold\"";
  if (!style.baseline.empty()) t += " dominant-baseline=\"" + escape(style.baseline) + "\"";
  if (style.rotate != 0)
    t += " transform=\"rotate(" + num(style.rotate) + " " + num(x) + " " + num(y) + ")\"";
  if (style.halo)
    t += " stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" "
         "paint-order=\"stroke\"";
  t += ">" + escape(content) + "</text>\n";
  body_ += t;
}

void Svg::begin_group(std::string_view title, std::string_view css_class) {
  body_ += "<g";
  if (!css_class.empty()) body_ += " class=\"" + escape(css_class) + "\"";
  body_ += ">";
  if (!title.empty()) body_ += "<title>" + escape(title) + "</title>";
  body_ += "\n";
  ++open_groups_;
}

void Svg::end_group() {
  if (open_groups_ == 0) return;
  body_ += "</g>\n";
  --open_groups_;
}

void Svg::raw(std::string_view markup) {
  body_ += markup;
}

std::string Svg::str() const {
  std::string doc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  doc += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width_) + "\" height=\"" +
         num(height_) + "\" viewBox=\"0 0 " + num(width_) + " " + num(height_) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n";
  doc += "<rect x=\"0\" y=\"0\" width=\"" + num(width_) + "\" height=\"" + num(height_) +
         "\" fill=\"#ffffff\"/>\n";
  doc += body_;
  for (int i = 0; i < open_groups_; ++i) doc += "</g>\n";
  doc += "</svg>\n";
  return doc;
}

}  // namespace timeroof::plots
