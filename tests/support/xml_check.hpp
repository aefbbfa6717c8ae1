// A minimal XML well-formedness checker for the tests of SVG charts and HTML
// reports, which need no XML library: elements nest and close in order, one
// root, attributes are quoted and unique, & starts a known entity or a character
// reference, no < inside text or attribute values (nor a raw >, which the
// writers always escape). Comments, <?...?> and a <!DOCTYPE ...> are skipped.
// It also decodes the text of every <title> and <text> element.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace timeroof::test {

struct XmlCheck {
  bool ok = true;
  std::string error;
  std::size_t elements = 0;
  std::vector<std::string> titles;
  std::vector<std::string> texts;  // decoded text of <text> elements
  bool has_text(const std::string& t) const {
    return std::find(texts.begin(), texts.end(), t) != texts.end();
  }
};

XmlCheck check_xml(const std::string& doc);

}  // namespace timeroof::test
