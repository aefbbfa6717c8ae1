#include "counters/activity_records.hpp"

#include <cupti_callbacks.h>
#include <cxxabi.h>

#include <cstdlib>
#include <optional>

namespace timeroof {

std::string demangle(const char* symbol) {
  if (symbol == nullptr) return {};
  int status = 0;
  char* plain = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  if (status != 0 || plain == nullptr) {
    std::free(plain);
    return symbol;
  }
  std::string result(plain);
  std::free(plain);
  return result;
}

const char* to_string(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::unknown:
      return "unknown";
    case MemoryKind::pageable:
      return "pageable";
    case MemoryKind::pinned:
      return "pinned";
    case MemoryKind::device:
      return "device";
    case MemoryKind::array:
      return "array";
    case MemoryKind::managed:
      return "managed";
    case MemoryKind::device_static:
      return "device_static";
    case MemoryKind::managed_static:
      return "managed_static";
  }
  return "unknown";
}

const char* to_string(CopyDirection direction) {
  switch (direction) {
    case CopyDirection::h2d:
      return "h2d";
    case CopyDirection::d2h:
      return "d2h";
    case CopyDirection::d2d:
      return "d2d";
    case CopyDirection::other:
      return "other";
  }
  return "other";
}

const char* to_string(SyncType type) {
  switch (type) {
    case SyncType::unknown:
      return "unknown";
    case SyncType::event_synchronize:
      return "event_synchronize";
    case SyncType::stream_wait_event:
      return "stream_wait_event";
    case SyncType::stream_synchronize:
      return "stream_synchronize";
    case SyncType::context_synchronize:
      return "context_synchronize";
  }
  return "unknown";
}

namespace {

MemoryKind memory_kind(unsigned kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return MemoryKind::pageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return MemoryKind::pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return MemoryKind::device;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return MemoryKind::array;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return MemoryKind::managed;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return MemoryKind::device_static;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return MemoryKind::managed_static;
    default:
      return MemoryKind::unknown;
  }
}

CopyDirection copy_direction(unsigned kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return CopyDirection::h2d;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return CopyDirection::d2h;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return CopyDirection::d2d;
    default:
      return CopyDirection::other;
  }
}

SyncType sync_type(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return SyncType::event_synchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return SyncType::stream_wait_event;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return SyncType::stream_synchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return SyncType::context_synchronize;
    default:
      return SyncType::unknown;
  }
}

std::optional<std::uint64_t> known_timestamp(std::uint64_t ns) {
  if (ns == static_cast<std::uint64_t>(CUPTI_TIMESTAMP_UNKNOWN)) return std::nullopt;
  return ns;
}

// Runtime callback names carry the API version ("cudaLaunchKernel_v7000"); drop it.
// Driver names are the exported symbols ("cuMemcpyHtoD_v2") and stay as they are.
std::string strip_version(const char* raw, ApiDomain domain) {
  std::string name = raw ? raw : "";
  if (domain != ApiDomain::runtime) return name;
  const std::size_t v = name.rfind("_v");
  if (v == std::string::npos || v + 2 >= name.size()) return name;
  for (std::size_t i = v + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  name.resize(v);
  return name;
}

}  // namespace

const std::string& ActivityDecoder::demangled(const char* raw_name) {
  const std::string raw = raw_name ? raw_name : "";
  auto it = demangled_.find(raw);
  if (it == demangled_.end()) it = demangled_.emplace(raw, demangle(raw.c_str())).first;
  return it->second;
}

const std::string& ActivityDecoder::api_name(ApiDomain domain, std::uint32_t cbid) {
  const auto key = std::make_pair(static_cast<int>(domain), cbid);
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  const char* raw = nullptr;
  const CUpti_CallbackDomain cb_domain =
      domain == ApiDomain::runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  std::string name;
  if (cuptiGetCallbackName(cb_domain, cbid, &raw) == CUPTI_SUCCESS && raw != nullptr) {
    name = strip_version(raw, domain);
  } else {
    name = std::string(to_string(domain)) + "_cbid_" + std::to_string(cbid);
  }
  return api_names_.emplace(key, std::move(name)).first->second;
}

const char* copy_kind_name(std::uint32_t cupti_copy_kind) {
  switch (cupti_copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "other";
  }
}

DecodedActivity ActivityDecoder::decode(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* r = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      KernelActivity k;
      const ChosenKernelName chosen =
          choose_kernel_name(r->name, launches_ ? launches_->take(r->correlationId) : std::nullopt);
      k.name = demangled(chosen.raw.c_str());
      k.named_at_launch = chosen.from_launch;
      if (chosen.renamed) k.cupti_name = demangled(r->name);
      k.grid = {r->gridX, r->gridY, r->gridZ};
      k.block = {r->blockX, r->blockY, r->blockZ};
      k.registers = r->registersPerThread;
      k.static_shared_bytes = r->staticSharedMemory;
      k.dynamic_shared_bytes = r->dynamicSharedMemory;
      k.queued_ns = known_timestamp(r->queued);
      k.submitted_ns = known_timestamp(r->submitted);
      k.start_ns = r->start;
      k.end_ns = r->end;
      k.correlation_id = r->correlationId;
      k.stream_id = r->streamId;
      k.device_id = r->deviceId;
      return k;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* r = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      MemcpyActivity m;
      m.direction = copy_direction(r->copyKind);
      m.src_kind = memory_kind(r->srcKind);
      m.dst_kind = memory_kind(r->dstKind);
      m.pinned = (m.direction == CopyDirection::h2d && m.src_kind == MemoryKind::pinned) ||
                 (m.direction == CopyDirection::d2h && m.dst_kind == MemoryKind::pinned);
      m.cupti_copy_kind = r->copyKind;
      m.bytes = r->bytes;
      m.start_ns = r->start;
      m.end_ns = r->end;
      m.correlation_id = r->correlationId;
      m.runtime_correlation_id = r->runtimeCorrelationId;
      m.stream_id = r->streamId;
      m.device_id = r->deviceId;
      return m;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* r = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      MemsetActivity m;
      m.memory_kind = memory_kind(r->memoryKind);
      m.value = r->value;
      m.bytes = r->bytes;
      m.start_ns = r->start;
      m.end_ns = r->end;
      m.correlation_id = r->correlationId;
      m.stream_id = r->streamId;
      m.device_id = r->deviceId;
      return m;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* r = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      ApiActivity a;
      a.domain =
          record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? ApiDomain::runtime : ApiDomain::driver;
      a.cbid = r->cbid;
      a.name = api_name(a.domain, r->cbid);
      a.process_id = r->processId;
      a.start_ns = r->start;
      a.end_ns = r->end;
      a.correlation_id = r->correlationId;
      a.thread_id = r->threadId;
      a.return_value = r->returnValue;
      return a;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* r = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      SyncActivity s;
      s.type = sync_type(r->type);
      s.start_ns = r->start;
      s.end_ns = r->end;
      s.correlation_id = r->correlationId;
      s.stream_id = r->streamId;
      return s;
    }
    default:
      return std::monostate{};
  }
}

}  // namespace timeroof
