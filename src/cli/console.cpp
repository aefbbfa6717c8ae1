#include "src/cli/console.hpp"

#include <algorithm>
#include <cstdio>
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

std::string text_table(const std::vector<std::vector<std::string>>& cells,
                       const std::vector<bool>& right, bool rule_under_header) {
  // Cells hold stored names: escaped whole, line breaks too, so each row stays one line.
  std::vector<std::vector<std::string>> rows = cells;
  for (auto& row : rows)
    for (std::string& cell : row) cell = terminal_safe(cell);
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::ostringstream out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (std::size_t c = 0; c < rows[r].size(); ++c) {
      const std::string pad(widths[c] - rows[r][c].size(), ' ');
      const bool align_right = c < right.size() && right[c];
      line += align_right ? pad + rows[r][c] : rows[r][c];
      if (c + 1 < rows[r].size()) line += align_right ? "  " : pad + "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << "  " << line << '\n';
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
                    format_si(c.sm_clock_hz, "Hz"), spread, c.method});
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
  return "power and energy (NVML: board power over the timed launches; sustained: the same "
         "kernel under a long load, its second half)\n" +
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
  for (const CeilingSkip& skip : run.machine.skipped)
    out << "  " << (skip.failed ? "FAILED  " : "skipped ") << skip.name << ": " << skip.reason
        << "\n";
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

void refuse_overwriting(const std::string& out, const std::vector<std::string>& protected_files) {
  namespace fs = std::filesystem;
  if (out.empty()) return;
  for (const std::string& file : protected_files) {
    std::error_code error;
    const bool same = fs::exists(out, error) && fs::exists(file, error)
                          ? fs::equivalent(out, file, error)
                          : fs::weakly_canonical(out, error) == fs::weakly_canonical(file, error);
    if (same)
      throw usage_error("--out " + out + " is " + file +
                        ", which this command reads: writing there would destroy it; pass "
                        "another --out");
  }
}

void write_output(const std::string& out, const std::string& text,
                  const std::vector<std::string>& protected_files) {
  if (out.empty()) {
    std::cout << text;
    return;
  }
  refuse_overwriting(out, protected_files);
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
