#include "sweeps/cudnn_graph.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "gpu/check.hpp"
#include "gpu/check_cudnn.hpp"

namespace timeroof::cudnn_graph {

namespace {

// Throws through the project's cuDNN check with a call text that names the
// descriptor and attribute (built only on failure) and the caller's line.
template <typename CallText>
void check(cudnnStatus_t status, CallText&& call_text, const Where& where) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const std::string call = call_text();
  check_detail::fail_cudnn(status, call.c_str(), where.file_name(), static_cast<int>(where.line()));
}

template <std::size_t N>
std::string name_in(const std::array<const char*, N>& names, long long value, const char* what) {
  if (value >= 0 && static_cast<std::size_t>(value) < N)
    return names[static_cast<std::size_t>(value)];
  return std::string(what) + " " + std::to_string(value);
}

// cudnnBackendDescriptorType_t, cudnnBackendAttributeType_t and the note enums
// are contiguous from 0 in cudnn_graph.h: tables indexed by value.
constexpr std::array<const char*, 44> kDescriptorTypeNames = {
    "CUDNN_BACKEND_POINTWISE_DESCRIPTOR",
    "CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR",
    "CUDNN_BACKEND_ENGINE_DESCRIPTOR",
    "CUDNN_BACKEND_ENGINECFG_DESCRIPTOR",
    "CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR",
    "CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR",
    "CUDNN_BACKEND_INTERMEDIATE_INFO_DESCRIPTOR",
    "CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR",
    "CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR",
    "CUDNN_BACKEND_LAYOUT_INFO_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR",
    "CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR",
    "CUDNN_BACKEND_TENSOR_DESCRIPTOR",
    "CUDNN_BACKEND_MATMUL_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR",
    "CUDNN_BACKEND_REDUCTION_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR",
    "CUDNN_BACKEND_RESAMPLE_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_SIGNAL_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR",
    "CUDNN_BACKEND_RNG_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR",
    "CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_BLOCK_SCALE_QUANTIZE_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_BLOCK_SCALE_DEQUANTIZE_DESCRIPTOR",
    "CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_EXPAND_BAND_MATRIX_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_CONTRACT_BAND_MATRIX_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_MOE_GROUPED_MATMUL_DESCRIPTOR",
    "CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR",
};

constexpr std::array<const char*, 31> kAttributeTypeNames = {
    "CUDNN_TYPE_HANDLE",
    "CUDNN_TYPE_DATA_TYPE",
    "CUDNN_TYPE_BOOLEAN",
    "CUDNN_TYPE_INT64",
    "CUDNN_TYPE_FLOAT",
    "CUDNN_TYPE_DOUBLE",
    "CUDNN_TYPE_VOID_PTR",
    "CUDNN_TYPE_CONVOLUTION_MODE",
    "CUDNN_TYPE_HEUR_MODE",
    "CUDNN_TYPE_KNOB_TYPE",
    "CUDNN_TYPE_NAN_PROPOGATION",
    "CUDNN_TYPE_NUMERICAL_NOTE",
    "CUDNN_TYPE_LAYOUT_TYPE",
    "CUDNN_TYPE_ATTRIB_NAME",
    "CUDNN_TYPE_POINTWISE_MODE",
    "CUDNN_TYPE_BACKEND_DESCRIPTOR",
    "CUDNN_TYPE_GENSTATS_MODE",
    "CUDNN_TYPE_BN_FINALIZE_STATS_MODE",
    "CUDNN_TYPE_REDUCTION_OPERATOR_TYPE",
    "CUDNN_TYPE_BEHAVIOR_NOTE",
    "CUDNN_TYPE_TENSOR_REORDERING_MODE",
    "CUDNN_TYPE_RESAMPLE_MODE",
    "CUDNN_TYPE_PADDING_MODE",
    "CUDNN_TYPE_INT32",
    "CUDNN_TYPE_CHAR",
    "CUDNN_TYPE_SIGNAL_MODE",
    "CUDNN_TYPE_FRACTION",
    "CUDNN_TYPE_NORM_MODE",
    "CUDNN_TYPE_NORM_FWD_PHASE",
    "CUDNN_TYPE_RNG_DISTRIBUTION",
    "CUDNN_TYPE_MOE_GROUPED_MATMUL_MODE",
};

constexpr std::array<const char*, 10> kNumericalNoteNames = {
    "CUDNN_NUMERICAL_NOTE_TENSOR_CORE",
    "CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS",
    "CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION",
    "CUDNN_NUMERICAL_NOTE_FFT",
    "CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC",
    "CUDNN_NUMERICAL_NOTE_WINOGRAD",
    "CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4",
    "CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6",
    "CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13",
    "CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP",
};

constexpr std::array<const char*, 5> kBehaviorNoteNames = {
    "CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION",
    "CUDNN_BEHAVIOR_NOTE_REQUIRES_FILTER_INT8x32_REORDER",
    "CUDNN_BEHAVIOR_NOTE_REQUIRES_BIAS_INT8x32_REORDER",
    "CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API",
    "CUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY",
};

constexpr std::array<const char*, 4> kHeurModeNames = {
    "CUDNN_HEUR_MODE_INSTANT",
    "CUDNN_HEUR_MODE_B",
    "CUDNN_HEUR_MODE_FALLBACK",
    "CUDNN_HEUR_MODE_A",
};

std::string element_count_text(std::int64_t count) {
  return std::to_string(count) + (count == 1 ? " element" : " elements");
}

}  // namespace

std::string to_string(cudnnBackendDescriptorType_t type) {
  return name_in(kDescriptorTypeNames, type, "descriptor type");
}
std::string to_string(cudnnBackendAttributeType_t type) {
  return name_in(kAttributeTypeNames, type, "attribute type");
}
std::string to_string(cudnnBackendNumericalNote_t note) {
  return name_in(kNumericalNoteNames, note, "numerical note");
}
std::string to_string(cudnnBackendBehaviorNote_t note) {
  return name_in(kBehaviorNoteNames, note, "behavior note");
}
std::string to_string(cudnnBackendHeurMode_t mode) {
  return name_in(kHeurModeNames, mode, "heuristic mode");
}

// ---------------------------------------------------------------------------
// Descriptor

Descriptor::Descriptor(cudnnBackendDescriptorType_t type, Where where) : type_(type) {
  cudnnBackendDescriptor_t raw = nullptr;
  check(
      cudnnBackendCreateDescriptor(type, &raw),
      [&] { return "cudnnBackendCreateDescriptor(" + to_string(type) + ")"; }, where);
  handle_ = UniqueHandle<cudnnBackendDescriptor_t, detail::DescriptorRelease>(raw);
}

void Descriptor::set_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                         std::int64_t count, const void* values, const Where& where) {
  check(
      cudnnBackendSetAttribute(get(), name, type, count, values),
      [&] {
        return "cudnnBackendSetAttribute(" + to_string(type_) + ", attribute " +
               std::to_string(name) + ", " + to_string(type) + ", " + element_count_text(count) +
               ")";
      },
      where);
}

std::int64_t Descriptor::get_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                 std::int64_t requested, void* values, const Where& where) const {
  std::int64_t count = 0;
  check(
      cudnnBackendGetAttribute(get(), name, type, requested, &count, values),
      [&] {
        return "cudnnBackendGetAttribute(" + to_string(type_) + ", attribute " +
               std::to_string(name) + ", " + to_string(type) + ", up to " +
               element_count_text(requested) + ")";
      },
      where);
  return count;
}

Descriptor& Descriptor::set(cudnnBackendAttributeName_t name, const Descriptor& value,
                            Where where) {
  const cudnnBackendDescriptor_t raw = value.get();
  set_raw(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, where);
  return *this;
}

Descriptor& Descriptor::set_descriptors(cudnnBackendAttributeName_t name,
                                        std::span<const Descriptor* const> values, Where where) {
  std::vector<cudnnBackendDescriptor_t> raw;
  raw.reserve(values.size());
  for (const Descriptor* value : values) raw.push_back(value->get());
  set_raw(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<std::int64_t>(raw.size()), raw.data(),
          where);
  return *this;
}

Descriptor& Descriptor::set_pointer(cudnnBackendAttributeName_t name, void* value, Where where) {
  set_raw(name, CUDNN_TYPE_VOID_PTR, 1, &value, where);
  return *this;
}

Descriptor& Descriptor::set_pointers(cudnnBackendAttributeName_t name,
                                     std::span<void* const> values, Where where) {
  set_raw(name, CUDNN_TYPE_VOID_PTR, static_cast<std::int64_t>(values.size()), values.data(),
          where);
  return *this;
}

Descriptor& Descriptor::finalize(Where where) {
  check(
      cudnnBackendFinalize(get()), [&] { return "cudnnBackendFinalize(" + to_string(type_) + ")"; },
      where);
  finalized_ = true;
  return *this;
}

std::int64_t Descriptor::count(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                               Where where) const {
  return get_raw(name, type, 0, nullptr, where);
}

Descriptor Descriptor::get_descriptor(cudnnBackendAttributeName_t name,
                                      cudnnBackendDescriptorType_t element_type,
                                      Where where) const {
  std::vector<Descriptor> one = get_descriptors(name, element_type, 1, where);
  if (one.empty())
    throw GpuError("cuDNN", CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE,
                   "cuDNN returned no " + to_string(element_type) + " for attribute " +
                       std::to_string(name) + " of a " + to_string(type_) + " (at " +
                       where.file_name() + ":" + std::to_string(where.line()) + ")");
  return std::move(one.front());
}

std::vector<Descriptor> Descriptor::get_descriptors(cudnnBackendAttributeName_t name,
                                                    cudnnBackendDescriptorType_t element_type,
                                                    std::int64_t max_count, Where where) const {
  std::vector<Descriptor> out;
  std::vector<cudnnBackendDescriptor_t> raw;
  out.reserve(static_cast<std::size_t>(max_count));
  raw.reserve(static_cast<std::size_t>(max_count));
  for (std::int64_t i = 0; i < max_count; ++i) {
    out.emplace_back(element_type, where);
    raw.push_back(out.back().get());
  }
  const std::int64_t got =
      get_raw(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, max_count, raw.data(), where);
  out.erase(out.begin() + std::clamp<std::int64_t>(got, 0, max_count), out.end());
  for (Descriptor& d : out) d.finalized_ = true;  // cuDNN hands out finalized descriptors
  return out;
}

std::string Descriptor::get_text(cudnnBackendAttributeName_t name, Where where) const {
  const std::int64_t size = count(name, CUDNN_TYPE_CHAR, where);
  std::string text(static_cast<std::size_t>(std::max<std::int64_t>(size, 0)), '\0');
  const std::int64_t got = get_raw(name, CUDNN_TYPE_CHAR, size, text.data(), where);
  text.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(got, 0, size)));
  const std::size_t end = text.find('\0');
  if (end != std::string::npos) text.resize(end);
  return text;
}

Descriptor& Descriptor::keep_alive(std::shared_ptr<const Descriptor> part) {
  parts_.push_back(std::move(part));
  return *this;
}

// ---------------------------------------------------------------------------
// Graph, heuristics, engines

Descriptor make_tensor(const TensorSpec& spec, Where where) {
  if (spec.dims.empty() || spec.dims.size() != spec.strides.size())
    throw std::logic_error("cudnn_graph::make_tensor: " + std::to_string(spec.dims.size()) +
                           " dims and " + std::to_string(spec.strides.size()) +
                           " strides for tensor uid " + std::to_string(spec.uid));
  Descriptor tensor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, where);
  tensor.set(CUDNN_ATTR_TENSOR_DATA_TYPE, spec.data_type, where)
      .set_array<std::int64_t>(CUDNN_ATTR_TENSOR_DIMENSIONS, spec.dims, where)
      .set_array<std::int64_t>(CUDNN_ATTR_TENSOR_STRIDES, spec.strides, where)
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, spec.uid, where)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, spec.alignment, where);
  if (spec.is_virtual) tensor.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, true, where);
  if (spec.is_by_value) tensor.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, true, where);
  tensor.finalize(where);
  return tensor;
}

Descriptor make_operation_graph(cudnnHandle_t handle,
                                const std::vector<const Descriptor*>& operations, Where where) {
  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, where);
  // The handle is optional from cuDNN 9.8 on; cudnn-frontend still sets it, and
  // 9.x before 9.8 requires it.
  graph.set_descriptors(CUDNN_ATTR_OPERATIONGRAPH_OPS, operations, where)
      .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, handle, where)
      .finalize(where);
  return graph;
}

std::int64_t engine_count(const Descriptor& graph, Where where) {
  return graph.get<std::int64_t>(CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, where);
}

std::vector<Descriptor> heuristic_configs(const Descriptor& graph, cudnnBackendHeurMode_t mode,
                                          Where where) {
  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, where);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, where)
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, mode, where)
      .finalize(where);
  const std::int64_t listed =
      heuristics.count(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, where);
  return heuristics.get_descriptors(CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                    CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, listed, where);
}

bool ConfigInfo::has(cudnnBackendNumericalNote_t note) const {
  return std::find(numerical_notes.begin(), numerical_notes.end(), note) != numerical_notes.end();
}
bool ConfigInfo::has(cudnnBackendBehaviorNote_t note) const {
  return std::find(behavior_notes.begin(), behavior_notes.end(), note) != behavior_notes.end();
}
std::string ConfigInfo::name() const {
  return plan_name(engine, knobs);
}

ConfigInfo describe_config(const Descriptor& config, Where where) {
  ConfigInfo info;
  const Descriptor engine =
      config.get_descriptor(CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR, where);
  info.engine = engine.get<std::int64_t>(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, where);
  info.numerical_notes = engine.get_array<cudnnBackendNumericalNote_t>(
      CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, where);
  info.behavior_notes = engine.get_array<cudnnBackendBehaviorNote_t>(
      CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, where);
  const std::vector<Descriptor> choices =
      config.get_descriptors(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                             CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS, where);
  for (const Descriptor& choice : choices)
    info.knobs.push_back(
        {choice.get<cudnnBackendKnobType_t>(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, where),
         choice.get<std::int64_t>(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, where)});
  std::sort(info.knobs.begin(), info.knobs.end(),
            [](const KnobChoice& a, const KnobChoice& b) { return a.type < b.type; });
  return info;
}

nlohmann::json config_json(const ConfigInfo& info) {
  nlohmann::json knobs = nlohmann::json::object();
  for (const KnobChoice& knob : info.knobs) knobs[knob_name(knob.type)] = knob.value;
  nlohmann::json numerical = nlohmann::json::array(), behavior = nlohmann::json::array();
  for (cudnnBackendNumericalNote_t note : info.numerical_notes)
    numerical.push_back(to_string(note));
  for (cudnnBackendBehaviorNote_t note : info.behavior_notes) behavior.push_back(to_string(note));
  return {{"engine", info.engine},
          {"knobs", knobs},
          {"numerical_notes", numerical},
          {"behavior_notes", behavior}};
}

Descriptor make_engine(const Descriptor& graph, std::int64_t global_index, Where where) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, where);
  engine.set(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph, where)
      .set(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, global_index, where)
      .finalize(where);
  return engine;
}

std::vector<KnobRange> engine_knobs(const Descriptor& engine, Where where) {
  std::vector<KnobRange> ranges;
  for (const Descriptor& knob :
       engine.get_descriptors(CUDNN_ATTR_ENGINE_KNOB_INFO, CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR,
                              CUDNN_KNOB_TYPE_COUNTS, where))
    ranges.push_back({knob.get<cudnnBackendKnobType_t>(CUDNN_ATTR_KNOB_INFO_TYPE, where),
                      knob.get<std::int64_t>(CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE, where),
                      knob.get<std::int64_t>(CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, where),
                      knob.get<std::int64_t>(CUDNN_ATTR_KNOB_INFO_STRIDE, where)});
  return ranges;
}

Descriptor make_engine_config(std::shared_ptr<const Descriptor> engine,
                              std::span<const KnobChoice> knobs, Where where) {
  Descriptor config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, where);
  config.set(CUDNN_ATTR_ENGINECFG_ENGINE, *engine, where);
  std::vector<const Descriptor*> choices;
  for (const KnobChoice& knob : knobs) {
    auto choice = std::make_shared<Descriptor>(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, where);
    choice->set(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, knob.type, where)
        .set(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, knob.value, where)
        .finalize(where);
    choices.push_back(choice.get());
    config.keep_alive(std::move(choice));
  }
  if (!choices.empty()) config.set_descriptors(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, choices, where);
  config.keep_alive(std::move(engine)).finalize(where);
  return config;
}

// ---------------------------------------------------------------------------
// Plans, variant packs, execution

ExecutionPlan::ExecutionPlan(std::shared_ptr<const Descriptor> config, Where where)
    : config_(std::move(config)), plan_(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, where) {
  plan_.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *config_, where).finalize(where);
  info_ = describe_config(*config_, where);
  workspace_bytes_ = plan_.get<std::int64_t>(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, where);
  if (workspace_bytes_ < 0)
    throw GpuError("cuDNN", CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE,
                   "cuDNN reports a negative workspace (" + std::to_string(workspace_bytes_) +
                       " bytes) for plan " + info_.name());
}

VariantPack::VariantPack(std::span<const TensorPointer> tensors, void* workspace, Where where)
    : pack_(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, where) {
  for (const TensorPointer& tensor : tensors) {
    uids_.push_back(tensor.uid);
    pointers_.push_back(tensor.data);
  }
  pack_.set_array<std::int64_t>(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids_, where)
      .set_pointers(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, pointers_, where)
      .set_pointer(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, workspace, where)
      .finalize(where);
}

void execute(cudnnHandle_t handle, const ExecutionPlan& plan, const VariantPack& pack,
             Where where) {
  check(
      cudnnBackendExecute(handle, plan.descriptor().get(), pack.descriptor().get()),
      [&] { return "cudnnBackendExecute(" + plan.name() + ")"; }, where);
}

double seconds_per_execute(cudnnHandle_t handle, cudaStream_t stream, const ExecutionPlan& plan,
                           const VariantPack& pack, const SearchTiming& timing) {
  execute(handle, plan, pack);  // warm-up
  const Event start;
  const Event stop;
  auto round = [&](int calls) {
    start.record(stream);
    for (int call = 0; call < calls; ++call) execute(handle, plan, pack);
    stop.record(stream);
    stop.synchronize();
    return stop.seconds_since(start) / calls;
  };
  double best = round(1);
  const int calls = static_cast<int>(std::clamp(timing.round_seconds / std::max(best, 1e-7), 1.0,
                                                static_cast<double>(timing.max_calls)));
  for (int i = 0; i < timing.rounds; ++i) best = std::min(best, round(calls));
  return best;
}

// ---------------------------------------------------------------------------
// Plan names

std::string knob_name(cudnnBackendKnobType_t type) {
  return knob_type_name(static_cast<std::int64_t>(type));
}

std::string plan_name(std::int64_t engine, std::span<const KnobChoice> knobs) {
  std::vector<KnobChoice> sorted(knobs.begin(), knobs.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const KnobChoice& a, const KnobChoice& b) { return a.type < b.type; });
  std::string name = "eng" + std::to_string(engine);
  for (const KnobChoice& knob : sorted)
    name += " " + knob_name(knob.type) + "=" + std::to_string(knob.value);
  return name;
}

// The names this build knows (cudnn_plan_name.cpp) are cuDNN's, by value.
static_assert(kNamedKnobTypes <= CUDNN_KNOB_TYPE_COUNTS);

PlanName parse_plan_name(std::string_view text) {
  const ParsedPlanName parsed = parse_plan_name_text(text, CUDNN_KNOB_TYPE_COUNTS);
  PlanName plan;
  plan.engine = parsed.engine;
  for (const PlanKnob& knob : parsed.knobs)
    plan.knobs.push_back({static_cast<cudnnBackendKnobType_t>(knob.type), knob.value});
  return plan;
}

}  // namespace timeroof::cudnn_graph
