#include "src/cli/profile_console.hpp"

#include "core/format.hpp"
#include "plots/profile_report.hpp"

namespace timeroof::cli {

std::string profile_text(const roofline::ProfileAnalysis& analysis,
                         const nlohmann::json& provenance, std::size_t max_width) {
  std::string out = "Profile";
  if (provenance.is_object() && provenance.contains("command_line") &&
      provenance["command_line"].is_string())
    out += " of " + terminal_safe(provenance["command_line"].get<std::string>());
  out += "\n" + plots::profile_summary(analysis) + "\n";
  const auto print = [&](const plots::ProfileTable& t) {
    out += "\n" + t.title + "\n";
    if (t.rows.empty()) {
      out += "  " + t.when_empty + "\n";
      return;
    }
    std::vector<std::vector<std::string>> cells = {t.header};
    cells.insert(cells.end(), t.rows.begin(), t.rows.end());
    out += text_table(cells, t.numeric, true, max_width);
  };
  for (const plots::ProfileTable& t : plots::profile_tables(analysis, "  ")) print(t);
  // Older runs and killed programs recorded none: no empty table for them.
  if (const plots::ProfileTable libraries = plots::libraries_table(provenance);
      !libraries.rows.empty())
    print(libraries);
  return out;
}

std::string profile_text(const std::vector<TraceEvent>& events, const nlohmann::json& provenance,
                         std::size_t max_width) {
  return profile_text(roofline::analyze_profile(events), provenance, max_width);
}

}  // namespace timeroof::cli
