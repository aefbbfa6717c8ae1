#include "core/kernel_selection.hpp"

#include <charconv>
#include <utility>

#include "core/error.hpp"

namespace timeroof {

namespace {

std::uint64_t parse_count(const char* variable, const char* text) {
  std::uint64_t value = 0;
  const char* end = text + std::char_traits<char>::length(text);
  const auto [stop, error] = std::from_chars(text, end, value);
  if (error != std::errc() || stop != end || text == end)
    throw Error(ExitCode::usage, std::string(variable) + "='" + text +
                                     "' is not a whole number; `timeroof profile` sets it");
  return value;
}

bool parse_flag(const char* variable, const char* text) {
  const std::string value = text;
  if (value == "1") return true;
  if (value == "0") return false;
  throw Error(ExitCode::usage, std::string(variable) + "='" + value +
                                   "' must be 0 or 1; `timeroof profile` sets it");
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin) parts.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

std::optional<std::regex> compile(const std::string& pattern) {
  if (pattern.empty()) return std::nullopt;
  return std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
}

}  // namespace

KernelSelectionOptions selection_from_environment(const char* (*get)(const char*)) {
  KernelSelectionOptions options;
  if (const char* v = get(kCountersVariable)) options.enabled = parse_flag(kCountersVariable, v);
  if (const char* v = get(kKernelsVariable)) options.kernels = v;
  if (const char* v = get(kNvtxVariable)) options.nvtx = v;
  if (const char* v = get(kSkipVariable)) options.skip = parse_count(kSkipVariable, v);
  if (const char* v = get(kCountVariable)) options.count = parse_count(kCountVariable, v);
  if (const char* v = get(kEveryVariable)) options.every = parse_flag(kEveryVariable, v);
  if (const char* v = get(kMetricsVariable)) options.metrics = split_commas(v);
  if (const char* v = get(kIterationRangeVariable)) options.iteration_range = v;
  return options;
}

std::vector<std::pair<std::string, std::string>> selection_environment(
    const KernelSelectionOptions& options) {
  std::string metrics;
  for (const std::string& m : options.metrics) metrics += (metrics.empty() ? "" : ",") + m;
  return {{kCountersVariable, options.enabled ? "1" : "0"},
          {kKernelsVariable, options.kernels},
          {kNvtxVariable, options.nvtx},
          {kSkipVariable, std::to_string(options.skip)},
          {kCountVariable, std::to_string(options.count)},
          {kEveryVariable, options.every ? "1" : "0"},
          {kMetricsVariable, metrics},
          {kIterationRangeVariable, options.iteration_range}};
}

std::optional<std::string> selection_problem(const KernelSelectionOptions& options) {
  const std::pair<const char*, const std::string*> patterns[] = {
      {"--kernels", &options.kernels},
      {"--nvtx", &options.nvtx},
      {"--iteration-range", &options.iteration_range}};
  for (const auto& [option, pattern] : patterns) {
    try {
      compile(*pattern);
    } catch (const std::regex_error& e) {
      return std::string(option) + " '" + *pattern + "' is not a regular expression (" + e.what() +
             "); give an ECMAScript regex, e.g. 'gemm|conv'";
    }
  }
  if (options.enabled && options.count == 0)
    return std::string("--count 0 measures nothing; give at least 1, or --no-counters");
  if (!options.iteration_range.empty() &&
      (!options.kernels.empty() || !options.nvtx.empty() || options.every))
    return std::string(
        "--iteration-range measures every kernel of one instance of its range; it excludes "
        "--kernels, --nvtx and --every (give one or the other)");
  if (!options.iteration_range.empty() && options.skip == 0)
    return std::string(
        "--iteration-range needs --skip 1 or more: the counters go to the launches of the "
        "traced instance just before the passes (e.g. --skip 1 after a warm-up)");
  return std::nullopt;
}

KernelSelector::KernelSelector(const KernelSelectionOptions& options)
    : enabled_(options.enabled),
      kernels_(compile(options.kernels)),
      nvtx_(compile(options.nvtx)),
      skip_(options.skip),
      count_(options.count),
      every_(options.every) {}

bool KernelSelector::select(const std::string& name, const LaunchShape& shape,
                            const std::string& context,
                            const std::vector<std::string>& open_ranges) {
  if (exhausted()) return false;
  if (kernels_ && !std::regex_search(name, *kernels_)) return false;
  if (nvtx_) {
    bool inside = false;
    for (const std::string& range : open_ranges)
      inside = inside || std::regex_search(range, *nvtx_);
    if (!inside) return false;
  }
  if (++matching_ <= skip_) return false;
  if (!every_) {
    // Every launch of a program passes here: the lookup must not copy its name.
    if (seen_.find(std::tie(name, shape, context)) != seen_.end()) return false;
    seen_.emplace(name, shape, context);
  }
  ++measured_;
  return true;
}

void KernelSelector::measurement_failed(const std::string& name, const LaunchShape& shape,
                                        const std::string& context) {
  if (measured_ > 0) --measured_;
  if (!every_) seen_.erase({name, shape, context});
}

}  // namespace timeroof
