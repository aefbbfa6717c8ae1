// A small RAII layer over cuDNN's graph (backend) API, the way frameworks call
// cuDNN: tensors and operations form an operation graph, heuristics rank engine
// configurations for it, one configuration finalizes into an execution plan, and
// a variant pack binds device pointers to the graph's tensor uids for
// cudnnBackendExecute. Everything is built once; executing touches no descriptor
// and allocates nothing, so an execute can be captured into a CUDA graph.
//
// Every cuDNN call goes through the project's cuDNN check (gpu/check.hpp): a
// failure throws GpuError with the call, the caller's file and line, and cuDNN's
// own message (cudnnGetLastErrorString); destructors only warn (TR_CUDNN_WARN).
// Only attributes cuDNN 9.14 offers are used: binaries built against newer
// headers run on the device machines' 9.14.
//
// Typical use (sweeps/conv2d_graph.cpp builds a convolution this way):
//   Descriptor x = make_tensor({.uid = 1, .data_type = CUDNN_DATA_HALF, .dims = ..., ...});
//   Descriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
//   op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x) ... .finalize();
//   Descriptor graph = make_operation_graph(handle, {&op});
//   std::vector<Descriptor> configs = heuristic_configs(graph, CUDNN_HEUR_MODE_A);
//   ExecutionPlan plan(std::make_shared<const Descriptor>(std::move(configs[0])));
//   VariantPack pack(uid_pointer_pairs, workspace);   // workspace: plan.workspace_bytes()
//   execute(handle, plan, pack);                      // per call
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/check_cudnn.hpp"
#include "gpu/handles.hpp"
#include "sweeps/cudnn_plan_name.hpp"

namespace timeroof::cudnn_graph {

// The cudnnBackendAttributeType_t of a C++ element type; types without one do
// not compile. Descriptors and void pointers have their own setters (both are
// void* to the compiler).
template <typename T>
struct AttributeType;
#define TR_CUDNN_ATTRIBUTE_TYPE(T, value_)                       \
  template <>                                                    \
  struct AttributeType<T> {                                      \
    static constexpr cudnnBackendAttributeType_t value = value_; \
  }
TR_CUDNN_ATTRIBUTE_TYPE(std::int64_t, CUDNN_TYPE_INT64);
TR_CUDNN_ATTRIBUTE_TYPE(std::int32_t, CUDNN_TYPE_INT32);
TR_CUDNN_ATTRIBUTE_TYPE(float, CUDNN_TYPE_FLOAT);
TR_CUDNN_ATTRIBUTE_TYPE(double, CUDNN_TYPE_DOUBLE);
TR_CUDNN_ATTRIBUTE_TYPE(bool, CUDNN_TYPE_BOOLEAN);
TR_CUDNN_ATTRIBUTE_TYPE(char, CUDNN_TYPE_CHAR);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnHandle_t, CUDNN_TYPE_HANDLE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnDataType_t, CUDNN_TYPE_DATA_TYPE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnConvolutionMode_t, CUDNN_TYPE_CONVOLUTION_MODE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnBackendHeurMode_t, CUDNN_TYPE_HEUR_MODE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnBackendKnobType_t, CUDNN_TYPE_KNOB_TYPE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnBackendNumericalNote_t, CUDNN_TYPE_NUMERICAL_NOTE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnBackendBehaviorNote_t, CUDNN_TYPE_BEHAVIOR_NOTE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnBackendLayoutType_t, CUDNN_TYPE_LAYOUT_TYPE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnBackendAttributeName_t, CUDNN_TYPE_ATTRIB_NAME);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnPointwiseMode_t, CUDNN_TYPE_POINTWISE_MODE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnGenStatsMode_t, CUDNN_TYPE_GENSTATS_MODE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnBnFinalizeStatsMode_t, CUDNN_TYPE_BN_FINALIZE_STATS_MODE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnReduceTensorOp_t, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnBackendTensorReordering_t, CUDNN_TYPE_TENSOR_REORDERING_MODE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnResampleMode_t, CUDNN_TYPE_RESAMPLE_MODE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnPaddingMode_t, CUDNN_TYPE_PADDING_MODE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnSignalMode_t, CUDNN_TYPE_SIGNAL_MODE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnFraction_t, CUDNN_TYPE_FRACTION);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnBackendNormMode_t, CUDNN_TYPE_NORM_MODE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnBackendNormFwdPhase_t, CUDNN_TYPE_NORM_FWD_PHASE);
TR_CUDNN_ATTRIBUTE_TYPE(cudnnRngDistribution_t, CUDNN_TYPE_RNG_DISTRIBUTION);
#undef TR_CUDNN_ATTRIBUTE_TYPE

using Where = std::source_location;

namespace detail {
struct DescriptorRelease {
  void operator()(cudnnBackendDescriptor_t d) const noexcept {
    TR_CUDNN_WARN(cudnnBackendDestroyDescriptor(d));
  }
};
}  // namespace detail

// Owns one cudnnBackendDescriptor_t. Setters and getters name the attribute and
// take or return typed values; a failure names the descriptor type, the
// attribute and the caller's line.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type, Where where = Where::current());

  cudnnBackendDescriptor_t get() const noexcept { return handle_.get(); }
  cudnnBackendDescriptorType_t type() const noexcept { return type_; }
  // True after finalize(), and for descriptors cuDNN filled in (get_descriptors).
  bool finalized() const noexcept { return finalized_; }

  template <typename T>
  Descriptor& set(cudnnBackendAttributeName_t name, const T& value,
                  Where where = Where::current()) {
    set_raw(name, AttributeType<T>::value, 1, &value, where);
    return *this;
  }
  template <typename T>
  Descriptor& set_array(cudnnBackendAttributeName_t name, std::span<const T> values,
                        Where where = Where::current()) {
    set_raw(name, AttributeType<T>::value, static_cast<std::int64_t>(values.size()), values.data(),
            where);
    return *this;
  }
  // A descriptor-valued attribute (CUDNN_TYPE_BACKEND_DESCRIPTOR).
  Descriptor& set(cudnnBackendAttributeName_t name, const Descriptor& value,
                  Where where = Where::current());
  Descriptor& set_descriptors(cudnnBackendAttributeName_t name,
                              std::span<const Descriptor* const> values,
                              Where where = Where::current());
  // A device pointer (CUDNN_TYPE_VOID_PTR), or an array of them.
  Descriptor& set_pointer(cudnnBackendAttributeName_t name, void* value,
                          Where where = Where::current());
  Descriptor& set_pointers(cudnnBackendAttributeName_t name, std::span<void* const> values,
                           Where where = Where::current());
  // cudnnBackendFinalize; throws (NOT_SUPPORTED for an engine that cannot run the
  // graph) with cuDNN's reason.
  Descriptor& finalize(Where where = Where::current());

  // How many elements the attribute holds (a request for zero).
  std::int64_t count(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                     Where where = Where::current()) const;
  // Exactly one element.
  template <typename T>
  T get(cudnnBackendAttributeName_t name, Where where = Where::current()) const {
    T value{};
    get_raw(name, AttributeType<T>::value, 1, &value, where);
    return value;
  }
  // Up to `max_count` elements (the attribute's count when smaller).
  template <typename T>
  std::vector<T> get_array(cudnnBackendAttributeName_t name, std::int64_t max_count,
                           Where where = Where::current()) const {
    std::vector<T> values(static_cast<std::size_t>(max_count));
    const std::int64_t got =
        get_raw(name, AttributeType<T>::value, max_count, values.data(), where);
    values.resize(static_cast<std::size_t>(got < max_count ? got : max_count));
    return values;
  }
  // Descriptor-valued attributes: cuDNN fills descriptors of `element_type` that
  // this creates (up to `max_count` of them).
  Descriptor get_descriptor(cudnnBackendAttributeName_t name,
                            cudnnBackendDescriptorType_t element_type,
                            Where where = Where::current()) const;
  std::vector<Descriptor> get_descriptors(cudnnBackendAttributeName_t name,
                                          cudnnBackendDescriptorType_t element_type,
                                          std::int64_t max_count,
                                          Where where = Where::current()) const;
  // A CUDNN_TYPE_CHAR attribute as text (e.g. a plan's JSON).
  std::string get_text(cudnnBackendAttributeName_t name, Where where = Where::current()) const;

  // Keeps `part` (a descriptor set into this one) alive as long as this one:
  // cuDNN does not document whether it copies descriptor-valued attributes, so
  // the layer never lets a part die first.
  Descriptor& keep_alive(std::shared_ptr<const Descriptor> part);

 private:
  void set_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
               std::int64_t count, const void* values, const Where& where);
  // Returns the attribute's element count as cuDNN reports it.
  std::int64_t get_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                       std::int64_t requested, void* values, const Where& where) const;

  // Declared first: destroyed after the descriptor that refers to them.
  std::vector<std::shared_ptr<const Descriptor>> parts_;
  UniqueHandle<cudnnBackendDescriptor_t, detail::DescriptorRelease> handle_;
  cudnnBackendDescriptorType_t type_;
  bool finalized_ = false;
};

// "CUDNN_BACKEND_TENSOR_DESCRIPTOR", "CUDNN_TYPE_INT64", ... ("descriptor type 45",
// "numerical note 12", ... for a value this build does not name).
std::string to_string(cudnnBackendDescriptorType_t type);
std::string to_string(cudnnBackendAttributeType_t type);
std::string to_string(cudnnBackendNumericalNote_t note);  // "CUDNN_NUMERICAL_NOTE_TENSOR_CORE"
std::string to_string(cudnnBackendBehaviorNote_t note);
std::string to_string(cudnnBackendHeurMode_t mode);  // "CUDNN_HEUR_MODE_A"

// A tensor of the graph. Dims and strides are in elements, in the logical order
// the operation expects (N, C, H, W for a convolution, whatever the memory
// order: NHWC is strides {H W C, 1, W C, C}).
struct TensorSpec {
  std::int64_t uid = 0;  // the variant pack binds device pointers by this id
  cudnnDataType_t data_type = CUDNN_DATA_FLOAT;
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> strides;
  std::int64_t alignment = 16;  // bytes the device pointer is aligned to (cudaMalloc: 256)
  bool is_virtual = false;      // an intermediate inside the graph, never bound to memory
  // A scalar passed by value (attention's scale, -inf and sequence lengths; a norm's
  // epsilon and momentum): the variant pack binds a HOST pointer to the value, read when
  // the plan executes, as cudnn-frontend passes them.
  bool is_by_value = false;
};
Descriptor make_tensor(const TensorSpec& spec, Where where = Where::current());

// The finalized graph of `operations` (each finalized). The handle fixes the
// device its engines are for.
Descriptor make_operation_graph(cudnnHandle_t handle,
                                const std::vector<const Descriptor*>& operations,
                                Where where = Where::current());
// How many engines cuDNN has for the graph: valid global indices are 0 .. count - 1.
std::int64_t engine_count(const Descriptor& graph, Where where = Where::current());

// The engine configurations heuristic `mode` ranks for `graph`, best first
// (CUDNN_HEUR_MODE_A: the recommended list; CUDNN_HEUR_MODE_FALLBACK: engines
// that work without tuning, for graphs mode A cannot rank).
std::vector<Descriptor> heuristic_configs(const Descriptor& graph, cudnnBackendHeurMode_t mode,
                                          Where where = Where::current());

struct KnobChoice {
  cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
  std::int64_t value = 0;
  friend bool operator==(const KnobChoice&, const KnobChoice&) = default;
};
// The values a knob of an engine takes: min, min + stride, ..., max.
struct KnobRange {
  cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
  std::int64_t min = 0;
  std::int64_t max = 0;
  std::int64_t stride = 1;
};

// What an engine configuration says about itself.
struct ConfigInfo {
  std::int64_t engine = -1;       // the engine's global index
  std::vector<KnobChoice> knobs;  // sorted by knob type
  std::vector<cudnnBackendNumericalNote_t> numerical_notes;
  std::vector<cudnnBackendBehaviorNote_t> behavior_notes;
  bool has(cudnnBackendNumericalNote_t note) const;
  bool has(cudnnBackendBehaviorNote_t note) const;
  // The plan name, see plan_name().
  std::string name() const;
};
ConfigInfo describe_config(const Descriptor& config, Where where = Where::current());
// {"engine", "knobs": {name: value}, "numerical_notes": [...], "behavior_notes": [...]}:
// what every operator's details() says of the configuration it runs.
nlohmann::json config_json(const ConfigInfo& info);

// A finalized engine of `graph` by global index (the graph must outlive it), its
// knobs, and a finalized configuration of it that keeps the engine alive (knobs
// not chosen keep the engine's defaults).
Descriptor make_engine(const Descriptor& graph, std::int64_t global_index,
                       Where where = Where::current());
std::vector<KnobRange> engine_knobs(const Descriptor& engine, Where where = Where::current());
Descriptor make_engine_config(std::shared_ptr<const Descriptor> engine,
                              std::span<const KnobChoice> knobs, Where where = Where::current());

// An engine configuration finalized into an execution plan. Keeps the
// configuration alive; the graph it came from must outlive the plan. The plan is
// for the device of the graph's handle: like cudnn-frontend, it sets no
// CUDNN_ATTR_EXECUTION_PLAN_HANDLE (deprecated).
class ExecutionPlan {
 public:
  // Throws (cuDNN NOT_SUPPORTED*) when the configuration cannot run the graph.
  explicit ExecutionPlan(std::shared_ptr<const Descriptor> config, Where where = Where::current());

  const Descriptor& descriptor() const noexcept { return plan_; }
  const ConfigInfo& info() const noexcept { return info_; }
  std::string name() const { return info_.name(); }
  // Device memory one execute needs, in bytes (CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE).
  std::int64_t workspace_bytes() const noexcept { return workspace_bytes_; }
  // cuDNN's serialization of the plan (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION);
  // throws for engines cuDNN cannot serialize.
  std::string json() const { return plan_.get_text(CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION); }

 private:
  std::shared_ptr<const Descriptor> config_;
  Descriptor plan_;
  ConfigInfo info_;
  std::int64_t workspace_bytes_ = 0;
};

// A device pointer bound to a tensor uid of the graph.
struct TensorPointer {
  std::int64_t uid = 0;
  void* data = nullptr;
};

// The finalized binding of a graph's tensors and a workspace (null when the plan
// needs none) for executes. The memory must outlive every execute using it.
class VariantPack {
 public:
  VariantPack(std::span<const TensorPointer> tensors, void* workspace,
              Where where = Where::current());
  const Descriptor& descriptor() const noexcept { return pack_; }

 private:
  std::vector<std::int64_t> uids_;
  std::vector<void*> pointers_;
  Descriptor pack_;
};

// cudnnBackendExecute on the handle's stream: enqueues, never synchronizes.
void execute(cudnnHandle_t handle, const ExecutionPlan& plan, const VariantPack& pack,
             Where where = Where::current());

// How a search times one plan: a warm-up call, one call alone, then `rounds`
// rounds of back-to-back calls, about round_seconds each (1 .. max_calls calls).
struct SearchTiming {
  double round_seconds = 5e-4;
  int rounds = 3;
  int max_calls = 100;
};

// Seconds per call of `plan` on `stream` (the handle's), between CUDA events:
// the fastest of the single call and the rounds (SearchTiming). Synchronizes.
double seconds_per_execute(cudnnHandle_t handle, cudaStream_t stream, const ExecutionPlan& plan,
                           const VariantPack& pack, const SearchTiming& timing);

// Plan names: "eng<N>" and the configuration's knobs in knob-type order as
// " <knob>=<value>", e.g. "eng28 tile_size=3 edge=1"; knob names are cuDNN's
// CUDNN_KNOB_TYPE_<NAME> in lower case, "k<T>" for a type this build does not
// name. parse_plan_name reads the same text back (case-insensitively, knobs in
// any order, "k<T>" for any type below CUDNN_KNOB_TYPE_COUNTS), so a printed
// name pins the same plan again.
std::string knob_name(cudnnBackendKnobType_t type);
std::string plan_name(std::int64_t engine, std::span<const KnobChoice> knobs);
struct PlanName {
  std::int64_t engine = -1;
  std::vector<KnobChoice> knobs;  // sorted by type; empty: the engine's heuristic or default knobs
};
// Throws a usage error saying what is wrong with `text`.
PlanName parse_plan_name(std::string_view text);

}  // namespace timeroof::cudnn_graph
