// What in a Markdown document would open markup that its writer meant as text:
// an HTML tag or autolink (< before a letter, / ! or ?), a code span (`) or an
// entity (&name; &#96;), each not preceded by a backslash. The report's
// Markdown escapes these with a backslash and nothing else (plots/report_markdown.cpp).
#pragma once

#include <string>

namespace timeroof::test {

// The first such opener with up to 40 characters around it, or "" when none.
std::string unescaped_markup(const std::string& markdown);

}  // namespace timeroof::test
