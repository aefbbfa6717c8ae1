#include "plots/report.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/error.hpp"
#include "plots/process.hpp"
#include "plots/report_document.hpp"
#include "plots/report_sections.hpp"

namespace timeroof::plots {

using detail::Block;

namespace {

// What to do about a write that failed with `error`, for the message.
std::string write_fix(int error) {
  switch (error) {
    case EACCES:
    case EPERM:
    case EROFS:
      return "pass a writable --out";
    case ENOSPC:
    case EDQUOT:
      return "free some space or pass another --out";
    case ENAMETOOLONG:
      return "pass a shorter --out";
    default:
      return "check the --out directory";
  }
}

// Writes `text` to `path`; a usage error naming the path, the system's reason
// and the fix when it cannot. A file left part-written is removed.
void write_file(const std::filesystem::path& path, const std::string& text) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  int error = file ? 0 : errno;
  if (file && std::fwrite(text.data(), 1, text.size(), file) != text.size()) error = errno;
  if (file && std::fclose(file) != 0 && error == 0) error = errno;
  if (error == 0) return;
  if (file) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
  throw usage_error("cannot write " + path.string() + " (" + std::strerror(error) + "); " +
                    write_fix(error));
}

// Writes each (name, text) into `dir` under a temporary name, then renames them
// into place, the last one last (index.html): a failure part-way (a full disk, a
// name too long) removes what it wrote and leaves no half-written report.
void write_all_or_none(const std::string& dir,
                       const std::vector<std::pair<std::string, std::string>>& files) {
  namespace fs = std::filesystem;
  std::vector<fs::path> staged;
  auto remove_staged = [&] {
    std::error_code ignored;
    for (const fs::path& path : staged) fs::remove(path, ignored);
  };
  try {
    for (const auto& [name, text] : files) {
      const fs::path path = fs::path(dir) / ("." + name + ".partial");
      write_file(path, text);
      staged.push_back(path);
    }
  } catch (...) {
    remove_staged();
    throw;
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    const fs::path path = fs::path(dir) / files[i].first;
    std::error_code ec;
    fs::rename(staged[i], path, ec);
    if (ec) {
      staged.erase(staged.begin(), staged.begin() + static_cast<std::ptrdiff_t>(i));
      remove_staged();
      throw usage_error("cannot write " + path.string() + " (" + ec.message() + "); " +
                        write_fix(ec.value()));
    }
  }
}

}  // namespace

void detail::write_report_files(const std::string& dir,
                                const std::vector<std::pair<std::string, std::string>>& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw usage_error("cannot create the report directory " + dir + " (" + ec.message() +
                      "); pass a writable --out");
  }
  write_all_or_none(dir, files);
}

ReportDocuments render_report(const std::vector<RunRecord>& runs, ChartFormat format,
                              const std::string& notice) {
  const std::vector<Block> doc = detail::report_blocks(runs, notice);
  ReportDocuments out;
  out.html = detail::render_html(doc);
  out.markdown = detail::render_markdown(doc, format);
  for (const Block& b : doc)
    if (b.kind == Block::Kind::chart) out.charts.emplace_back(b.file, b.svg);
  return out;
}

std::string sample_notice(const RunRecord& sample) {
  const Run& run = sample.run;
  auto or_unknown = [](const std::string& text) { return text.empty() ? "unknown" : text; };
  return "The bundled sample, not a measurement of this machine: " +
         or_unknown(run.machine.gpu.name) + ", recorded " + or_unknown(run.started_at) +
         " by timeroof " + or_unknown(run.tool_version) + " (commit " + or_unknown(run.git_sha) +
         ").";
}

const char* to_string(ChartFormat format) {
  switch (format) {
    case ChartFormat::svg:
      return "svg";
    case ChartFormat::png:
      return "png";
    case ChartFormat::pdf:
      return "pdf";
  }
  return "svg";
}

ChartFormat parse_chart_format(const std::string& name) {
  for (ChartFormat f : {ChartFormat::svg, ChartFormat::png, ChartFormat::pdf})
    if (name == to_string(f)) return f;
  throw usage_error("unknown chart format '" + name + "'; use svg, png or pdf");
}

std::vector<std::string> write_report(const std::vector<RunRecord>& runs,
                                      const std::string& out_dir, ChartFormat format,
                                      const std::string& notice) {
  namespace fs = std::filesystem;
  const std::vector<Block> doc = detail::report_blocks(runs, notice);
  // The SVG report first: it stands on its own if the conversion cannot run.
  std::vector<std::pair<std::string, std::string>> files;  // name, text
  std::vector<std::string> charts;
  for (const Block& b : doc) {
    if (b.kind != Block::Kind::chart) continue;
    files.emplace_back(b.file, b.svg);
    charts.push_back(b.file);
  }
  files.emplace_back("report.md", detail::render_markdown(doc, ChartFormat::svg));
  files.emplace_back("index.html", detail::render_html(doc));
  detail::write_report_files(out_dir, files);
  std::vector<std::string> written;
  for (const auto& [name, text] : files) written.push_back(name);
  if (format == ChartFormat::svg) return written;

  const std::string tool = detail::find_on_path("rsvg-convert");
  if (tool.empty()) {
    throw environment_error(std::string("rsvg-convert is not installed (not on PATH); ") +
                            to_string(format) +
                            " charts need it: install it with `sudo apt-get install "
                            "librsvg2-bin` (the report with SVG charts is in " +
                            out_dir + ")");
  }
  auto command = [&](const std::string& name) {
    std::vector<std::string> argv = {tool, "--format", to_string(format)};
    // PNG at twice the SVG's size: sharp on a slide and in print.
    if (format == ChartFormat::png) argv.insert(argv.end(), {"--zoom", "2"});
    argv.insert(argv.end(),
                {"--output", (fs::path(out_dir) / detail::chart_file(name, format)).string(),
                 (fs::path(out_dir) / name).string()});
    return argv;
  };
  // One rsvg-convert per core at a time (a report has dozens of charts).
  std::vector<std::vector<std::string>> commands;
  for (const std::string& name : charts) commands.push_back(command(name));
  const std::vector<std::size_t> failed =
      detail::run_all_silent(commands, std::thread::hardware_concurrency());
  if (!failed.empty()) {
    // Once more in the foreground, for what rsvg-convert says.
    const std::string& name = charts[*std::min_element(failed.begin(), failed.end())];
    const auto [code, message] = detail::run_quietly(command(name));
    throw environment_error(
        "rsvg-convert could not convert " + (fs::path(out_dir) / name).string() + " (" +
        (message.empty() ? "exit " + std::to_string(code) : message) + ")" +
        (failed.size() > 1 ? " nor " + std::to_string(failed.size() - 1) + " other chart(s)" : "") +
        "; the report with SVG charts is in " + out_dir);
  }
  write_file(fs::path(out_dir) / "report.md", detail::render_markdown(doc, format));
  for (const std::string& name : charts) written.push_back(detail::chart_file(name, format));
  return written;
}

}  // namespace timeroof::plots
