#include "tests/support/markdown_check.hpp"

#include <algorithm>
#include <regex>

namespace timeroof::test {

std::string unescaped_markup(const std::string& markdown) {
  static const std::regex opener(R"((^|[^\\])(<[A-Za-z/!?]|`|&#?[A-Za-z0-9]+;))");
  std::smatch m;
  if (!std::regex_search(markdown, m, opener)) return {};
  const auto at = static_cast<std::size_t>(m.position(2));
  const std::size_t from = at < 40 ? 0 : at - 40;
  return markdown.substr(from, std::min<std::size_t>(80, markdown.size() - from));
}

}  // namespace timeroof::test
