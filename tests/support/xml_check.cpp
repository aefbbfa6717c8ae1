#include "tests/support/xml_check.hpp"

#include <cctype>
#include <cstdlib>
#include <set>

namespace timeroof::test {

namespace {

bool decode_entity(const std::string& s, std::size_t& i, std::string& out) {
  const std::size_t semi = s.find(';', i);
  if (semi == std::string::npos || semi - i > 10) return false;
  const std::string name = s.substr(i + 1, semi - i - 1);
  if (name == "amp")
    out += '&';
  else if (name == "lt")
    out += '<';
  else if (name == "gt")
    out += '>';
  else if (name == "quot")
    out += '"';
  else if (name == "apos")
    out += '\'';
  else if (name.size() > 1 && name[0] == '#') {
    const bool hex = name[1] == 'x';
    const std::string digits = name.substr(hex ? 2 : 1);
    if (digits.empty()) return false;
    for (char c : digits)
      if (!(hex ? std::isxdigit(static_cast<unsigned char>(c))
                : std::isdigit(static_cast<unsigned char>(c))))
        return false;
    const long code = std::strtol(digits.c_str(), nullptr, hex ? 16 : 10);
    if (code < 128) out += static_cast<char>(code);
  } else {
    return false;
  }
  i = semi + 1;
  return true;
}

}  // namespace

XmlCheck check_xml(const std::string& doc) {
  XmlCheck r;
  auto fail = [&](const std::string& why, std::size_t at) {
    if (r.ok) r.error = why + " at offset " + std::to_string(at);
    r.ok = false;
  };
  std::vector<std::string> stack;
  bool root_seen = false;
  std::string text;  // current character data, decoded
  std::size_t i = 0;
  while (i < doc.size() && r.ok) {
    const char c = doc[i];
    if (c == '<') {
      if (doc.compare(i, 4, "<!--") == 0) {
        const std::size_t e = doc.find("-->", i);
        if (e == std::string::npos) return fail("unclosed comment", i), r;
        i = e + 3;
        continue;
      }
      // An HTML page's document type declaration (no internal subset here).
      if (doc.compare(i, 9, "<!DOCTYPE") == 0) {
        const std::size_t e = doc.find('>', i);
        if (e == std::string::npos) return fail("unclosed DOCTYPE", i), r;
        i = e + 1;
        continue;
      }
      if (doc.compare(i, 2, "<?") == 0) {
        const std::size_t e = doc.find("?>", i);
        if (e == std::string::npos) return fail("unclosed declaration", i), r;
        i = e + 2;
        continue;
      }
      const bool closing = i + 1 < doc.size() && doc[i + 1] == '/';
      std::size_t j = i + (closing ? 2 : 1);
      std::size_t n0 = j;
      while (j < doc.size() && (std::isalnum(static_cast<unsigned char>(doc[j])) || doc[j] == '-' ||
                                doc[j] == '_' || doc[j] == ':'))
        ++j;
      const std::string name = doc.substr(n0, j - n0);
      if (name.empty()) return fail("bad tag name", i), r;
      if (closing) {
        while (j < doc.size() && std::isspace(static_cast<unsigned char>(doc[j]))) ++j;
        if (j >= doc.size() || doc[j] != '>') return fail("bad closing tag", i), r;
        if (stack.empty() || stack.back() != name) return fail("mismatched </" + name + ">", i), r;
        if (name == "title") r.titles.push_back(text);
        if (name == "text") r.texts.push_back(text);
        stack.pop_back();
        text.clear();
        i = j + 1;
        continue;
      }
      if (stack.empty() && root_seen) return fail("second root element", i), r;
      root_seen = true;
      ++r.elements;
      std::set<std::string> attrs;
      bool self_closing = false;
      while (true) {
        while (j < doc.size() && std::isspace(static_cast<unsigned char>(doc[j]))) ++j;
        if (j >= doc.size()) return fail("unclosed tag", i), r;
        if (doc[j] == '>') break;
        if (doc.compare(j, 2, "/>") == 0) {
          self_closing = true;
          ++j;
          break;
        }
        const std::size_t a0 = j;
        while (j < doc.size() && doc[j] != '=' &&
               !std::isspace(static_cast<unsigned char>(doc[j])) && doc[j] != '>')
          ++j;
        const std::string attr = doc.substr(a0, j - a0);
        if (attr.empty() || j >= doc.size() || doc[j] != '=') return fail("bad attribute", j), r;
        if (!attrs.insert(attr).second) return fail("duplicate attribute " + attr, j), r;
        ++j;
        if (j >= doc.size() || (doc[j] != '"' && doc[j] != '\'')) return fail("unquoted", j), r;
        const char q = doc[j++];
        std::string value;
        while (j < doc.size() && doc[j] != q) {
          if (doc[j] == '<') return fail("< in attribute", j), r;
          if (doc[j] == '&') {
            if (!decode_entity(doc, j, value)) return fail("bad entity", j), r;
          } else {
            value += doc[j++];
          }
        }
        if (j >= doc.size()) return fail("unclosed attribute", a0), r;
        ++j;
      }
      if (!self_closing) stack.push_back(name);
      text.clear();
      i = j + 1;
      continue;
    }
    if (c == '&') {
      if (!decode_entity(doc, i, text)) return fail("bad entity", i), r;
      continue;
    }
    if (c == '>') return fail("raw > in text", i), r;  // legal XML, but we always escape it
    if (stack.empty() && !std::isspace(static_cast<unsigned char>(c)))
      return fail("text outside the root", i), r;
    text += c;
    ++i;
  }
  if (r.ok && !stack.empty()) fail("unclosed <" + stack.back() + ">", doc.size());
  if (r.ok && !root_seen) fail("no root element", 0);
  return r;
}

}  // namespace timeroof::test
