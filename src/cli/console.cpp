#include "src/cli/console.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/power.hpp"
#include "core/vocabulary.hpp"
#include "roofline/roof_energy.hpp"
#include "src/store/run_writer.hpp"

namespace timeroof::cli {

std::size_t terminal_columns() {
  if (const char* columns = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long value = std::strtol(columns, &end, 10);
    if (end != columns && *end == '\0' && value > 0) return static_cast<std::size_t>(value);
  }
  winsize size{};
  if (isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  return 0;
}

std::string wrap_help(const std::string& help, std::size_t width) {
  std::istringstream lines(help);
  std::ostringstream out;
  for (std::string line; std::getline(lines, line);) {
    if (display_width(line) <= width) {
      out << line << '\n';
      continue;
    }
    // The description starts after the first run of two spaces past the indent
    // ("  --db TEXT    results store"), unless that leaves it no room.
    const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
    const std::size_t gap = line.find("  ", indent);
    std::size_t column = gap == std::string::npos ? indent : line.find_first_not_of(' ', gap);
    if (column == std::string::npos || column > width / 2) column = indent;
    if (column >= width) {  // indented past the width: nothing to wrap into
      out << line << '\n';
      continue;
    }
    const std::vector<std::string> parts = wrap_words(line.substr(column), width - column);
    out << line.substr(0, column) << parts.front() << '\n';
    for (std::size_t k = 1; k < parts.size(); ++k)
      out << std::string(column, ' ') << parts[k] << '\n';
  }
  return out.str();
}

namespace {

// The narrowest a text column gets: its header, and its longest word, which is
// never cut (a kernel name, a path, "memory_bound(dram)" stay whole).
std::size_t narrowest(const std::vector<std::vector<std::string>>& rows, std::size_t column,
                      bool has_header) {
  std::size_t floor = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (column >= rows[r].size()) continue;
    if (r == 0 && has_header) {
      floor = std::max(floor, display_width(rows[r][column]));
      continue;
    }
    std::istringstream words(rows[r][column]);
    for (std::string word; words >> word;) floor = std::max(floor, display_width(word));
  }
  return floor;
}

// The column widths that fit `max_width` (0: no limit): the text (left-aligned)
// columns narrowed, the one with most room first, down to their narrowest;
// numbers keep their width. A table that cannot fit even so keeps its widths:
// wrapping would only make it taller, and a pager (less -S) shows it whole.
std::vector<std::size_t> fitted_widths(const std::vector<std::vector<std::string>>& rows,
                                       std::vector<std::size_t> widths,
                                       const std::vector<bool>& right, bool has_header,
                                       std::size_t max_width) {
  auto line_width = [](const std::vector<std::size_t>& of) {
    std::size_t total = 0;
    for (std::size_t w : of) total += w + 2;  // the indent, then a gap after each but the last
    return total;
  };
  if (max_width == 0 || line_width(widths) <= max_width) return widths;
  std::vector<std::size_t> floors = widths;
  for (std::size_t c = 0; c < widths.size(); ++c)
    if (c >= right.size() || !right[c]) floors[c] = narrowest(rows, c, has_header);
  if (line_width(floors) > max_width) return widths;
  while (line_width(widths) > max_width) {
    std::size_t widest = 0;
    for (std::size_t c = 1; c < widths.size(); ++c)
      if (widths[c] - floors[c] > widths[widest] - floors[widest]) widest = c;
    widths[widest] -= std::min(widths[widest] - floors[widest], line_width(widths) - max_width);
  }
  return widths;
}

}  // namespace

std::string text_table(const std::vector<std::vector<std::string>>& cells,
                       const std::vector<bool>& right, bool rule_under_header,
                       std::size_t max_width) {
  // Cells hold stored names: escaped whole, line breaks too, so a row's lines are ours.
  std::vector<std::vector<std::string>> rows = cells;
  for (auto& row : rows)
    for (std::string& cell : row) cell = terminal_safe(cell);
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], display_width(row[c]));
  }
  widths = fitted_widths(rows, widths, right, rule_under_header, max_width);

  std::ostringstream out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    // A cell wider than its column continues on the row's next lines.
    std::vector<std::vector<std::string>> parts;
    std::size_t lines = 1;
    for (std::size_t c = 0; c < rows[r].size(); ++c) {
      const bool align_right = c < right.size() && right[c];
      parts.push_back(align_right ? std::vector<std::string>{rows[r][c]}
                                  : wrap_words(rows[r][c], widths[c]));
      lines = std::max(lines, parts.back().size());
    }
    for (std::size_t k = 0; k < lines; ++k) {
      std::string line;
      for (std::size_t c = 0; c < parts.size(); ++c) {
        const std::string& part = k < parts[c].size() ? parts[c][k] : std::string();
        const std::size_t shown = display_width(part);
        const std::string pad(widths[c] > shown ? widths[c] - shown : 0, ' ');
        const bool align_right = c < right.size() && right[c];
        line += align_right ? pad + part : part;
        if (c + 1 < parts.size()) line += align_right ? "  " : pad + "  ";
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << "  " << line << '\n';
    }
    if (r == 0 && rule_under_header) {
      std::size_t total = 0;
      for (std::size_t w : widths) total += w + 2;
      out << "  " << std::string(total - 2, '-') << '\n';
    }
  }
  return out.str();
}

namespace {

// Left-aligned, with a rule under the header row.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  return text_table(rows, {}, true);
}

std::string clocks(const std::optional<double>& current, const std::optional<double>& base,
                   const std::optional<double>& max) {
  return format_si(current, "Hz") + " now, " + format_si(base, "Hz") + " base, " +
         format_si(max, "Hz") + " max";
}
}  // namespace

std::string format_gpu(const GpuInfo& gpu) {
  std::ostringstream out;
  out << "GPU " << gpu.index << ": " << gpu.name << " (chip " << (gpu.chip.empty() ? "?" : gpu.chip)
      << ", compute capability " << gpu.cc_major << "." << gpu.cc_minor << ")\n";
  out << "  SMs          " << gpu.sm_count << "\n";
  out << "  memory       " << format_binary_bytes(static_cast<double>(gpu.memory_bytes)) << ", "
      << gpu.memory_bus_bits << "-bit bus\n";
  out << "  L2           " << format_binary_bytes(static_cast<double>(gpu.l2_bytes)) << "\n";
  out << "  shared/SM    " << format_binary_bytes(static_cast<double>(gpu.shared_per_sm_bytes))
      << "\n";
  out << "  SM clock     "
      << clocks(gpu.sm_clock_current_hz, gpu.sm_clock_base_hz, gpu.sm_clock_max_hz) << "\n";
  out << "  mem clock    " << format_si(gpu.mem_clock_current_hz, "Hz") << " now, "
      << format_si(gpu.mem_clock_max_hz, "Hz") << " max\n";
  out << "  PCI / UUID   " << gpu.pci_bus_id << " / " << gpu.uuid << "\n";
  const SoftwareVersions& v = gpu.versions;
  out << "  driver       " << (v.driver.empty() ? "?" : v.driver) << " (CUDA " << v.cuda_driver
      << ")\n";
  out << "  libraries    CUDA runtime " << v.cuda_runtime << ", cuDNN " << v.cudnn << ", cuBLAS "
      << v.cublas << ", CUPTI " << v.cupti << "\n";
  if (gpu.counters.available) {
    out << "  counters     available (" << gpu.counters.evidence << ")\n";
  } else {
    out << "  counters     UNAVAILABLE: " << gpu.counters.reason << "\n";
    if (!gpu.counters.fix.empty()) out << "               fix: " << gpu.counters.fix << "\n";
  }
  return terminal_safe(out.str(), LineBreaks::keep);
}

// A few lines of a wrapped table; the report shows more, the export all of it.
constexpr std::size_t kConsoleMethodChars = 300;

std::string format_ceilings(const std::vector<Ceiling>& ceilings) {
  if (ceilings.empty()) return "  (no ceilings measured)\n";
  std::vector<std::vector<std::string>> rows{
      {"ceiling", "measured", "theoretical", "ratio", "SM clock", "spread", "method"}};
  for (const Ceiling& c : ceilings) {
    std::string ratio = "-";
    if (c.theoretical && *c.theoretical > 0)
      ratio = format_number(c.measured / *c.theoretical, hint::percent_1);
    const std::string spread = format_number(c.spread, hint::percent_1);
    rows.push_back({c.name, format_si(c.measured, c.unit), format_si(c.theoretical, c.unit), ratio,
                    format_si(c.sm_clock_hz, "Hz"), spread,
                    shortened_method(c.method, kConsoleMethodChars)});
  }
  return table(rows);
}

std::string format_roof_energy(const Machine& machine) {
  const std::vector<roofline::RoofEnergy> energy = roofline::roof_energy(machine);
  if (energy.empty()) return {};
  const auto energy_unit = [](const std::string& unit) {
    return unit == "FLOP/s" ? "J/FLOP" : unit == "B/s" ? "J/B" : "J";
  };
  std::vector<std::vector<std::string>> rows{{"ceiling", "power", "energy", "clock limits",
                                              "sustained", "vs burst", "SM clock", "power",
                                              "energy", "clock limits"}};
  for (const roofline::RoofEnergy& e : energy) {
    std::vector<std::string> row{e.ceiling, format_si(e.power.watts, "W"),
                                 format_si(e.joules_per_unit, energy_unit(e.unit)),
                                 describe_clock_limits(e.power.clock_limits)};
    if (const auto& s = e.sustained) {
      row.insert(row.end(), {format_si(s->measured, e.unit) + " (" + format_time(s->seconds) + ")",
                             format_number(e.sustained_ratio, hint::percent_1),
                             format_si(s->sm_clock_hz, "Hz"), format_si(s->power.watts, "W"),
                             format_si(e.sustained_joules_per_unit, energy_unit(e.unit)),
                             describe_clock_limits(s->power.clock_limits)});
    } else {
      row.insert(row.end(), {"-", "-", "-", "-", "-", "-"});
    }
    rows.push_back(std::move(row));
  }
  return "power and energy (NVML board power over the timed launches; sustained: a long "
         "load's second half)\n" +
         table(rows);
}

std::string format_library_references(const Machine& machine) {
  const std::vector<roofline::LibraryReference> references = roofline::library_references(machine);
  if (references.empty()) return {};
  std::vector<std::vector<std::string>> rows{{"reference", "measured", "at clock", "roof",
                                              "roof clock", "at the roof's clock", "of roof"}};
  for (const roofline::LibraryReference& r : references)
    rows.push_back({r.reference, format_si(r.measured, "FLOP/s"), format_si(r.clock_hz, "Hz"),
                    r.roof, format_si(r.roof_clock_hz, "Hz"), format_si(r.at_roof_clock, "FLOP/s"),
                    format_number(r.ratio, hint::percent_1)});
  return "library references against the roof of their type, quoted at the roof's clock (rate x "
         "roof clock / own clock)\n" +
         table(rows);
}

std::string shown_status(const Run& run) {
  if (run.status == to_string(RunStatus::running) && !run.host.empty() && run.host != this_host())
    return run.status + " (on " + run.host + ": cannot tell from here)";
  return run.status;
}

std::string format_run(const RunRecord& record, std::size_t position) {
  const Run& run = record.run;
  std::ostringstream out;
  out << "run " << run_number(run, position) << " (" << run.uuid << "), " << shown_status(run)
      << "\n";
  out << "  started      " << run.started_at
      << (run.finished_at.empty() ? "" : ", finished " + run.finished_at) << "\n";
  out << "  command      " << run.command_line << "\n";
  out << "  tool         timeroof " << run.tool_version << " (" << run.git_sha << ") on "
      << run.host << "\n";
  out << format_gpu(run.machine.gpu);
  out << "ceilings\n" << format_ceilings(run.machine.ceilings);
  out << format_roof_energy(run.machine) << format_library_references(run.machine);
  // A skip's reason is a sentence or two: wrapped to the terminal like help text.
  std::ostringstream skipped;
  for (const CeilingSkip& skip : run.machine.skipped)
    skipped << "  " << (skip.failed ? "FAILED  " : "skipped ") << skip.name << ": " << skip.reason
            << "\n";
  const std::size_t columns = terminal_columns();
  out << (columns > 0 ? wrap_help(skipped.str(), columns) : skipped.str());
  if (!run.machine.working_set.empty()) {
    out << "working set (bytes touched per pass -> bandwidth)\n";
    std::vector<std::vector<std::string>> rows{{"working set", "bandwidth"}};
    for (const WorkingSetSample& sample : run.machine.working_set)
      rows.push_back(
          {format_binary_bytes(sample.bytes), format_si(sample.bytes_per_second, "B/s")});
    out << table(rows);
  }
  if (!record.points.empty()) out << record.points.size() << " sweep points\n";
  return terminal_safe(out.str(), LineBreaks::keep);
}

std::string format_run_list(const std::vector<Run>& runs) {
  if (runs.empty()) return "  (no runs)\n";
  std::vector<std::vector<std::string>> rows{{"id", "uuid", "started", "GPU", "status", "command"}};
  for (const Run& run : runs) {
    rows.push_back({std::to_string(run.id), run.uuid.substr(0, 8), run.started_at,
                    run.machine.gpu.name, shown_status(run), run.command_line});
  }
  return table(rows);
}

void refuse_overwriting(const std::string& out, const std::vector<std::string>& protected_files,
                        const std::string& option) {
  namespace fs = std::filesystem;
  if (out.empty()) return;
  for (const std::string& file : protected_files) {
    std::error_code error;
    const bool same = fs::exists(out, error) && fs::exists(file, error)
                          ? fs::equivalent(out, file, error)
                          : fs::weakly_canonical(out, error) == fs::weakly_canonical(file, error);
    if (same)
      throw usage_error(option + " " + out + " is " + file +
                        ", which this command reads: writing there would destroy it; pass "
                        "another " +
                        option);
  }
}

void write_output(const std::string& out, const std::string& text,
                  const std::vector<std::string>& protected_files, const std::string& option) {
  if (out.empty()) {
    std::cout << text;
    return;
  }
  refuse_overwriting(out, protected_files, option);
  std::ofstream file(out, std::ios::binary);
  if (!(file << text))
    throw usage_error("cannot write " + out + "; check that its directory exists and is writable");
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string table_json_or_csv(bool json, const std::string& format, const std::string& fallback) {
  if (json && !format.empty() && format != "json")
    throw usage_error("--json and --format " + format + " disagree; give one of them");
  const std::string chosen = json ? "json" : format.empty() ? fallback : format;
  if (chosen != "table" && chosen != "json" && chosen != "csv")
    throw usage_error("--format " + chosen + ": unknown format (table, json or csv)");
  return chosen;
}

}  // namespace timeroof::cli
