#include "inject/nvtx_records.hpp"

#include <cupti_nvtx_cbid.h>
#include <generated_nvtx_meta.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "inject/fork_guard.hpp"
#include "inject/trace_records.hpp"

namespace timeroof::inject {
namespace {

constexpr CUpti_CallbackId kCallbacks[] = {CUPTI_CBID_NVTX_nvtxMarkA,
                                           CUPTI_CBID_NVTX_nvtxMarkW,
                                           CUPTI_CBID_NVTX_nvtxMarkEx,
                                           CUPTI_CBID_NVTX_nvtxDomainMarkEx,
                                           CUPTI_CBID_NVTX_nvtxRangePushA,
                                           CUPTI_CBID_NVTX_nvtxRangePushW,
                                           CUPTI_CBID_NVTX_nvtxRangePushEx,
                                           CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
                                           CUPTI_CBID_NVTX_nvtxRangePop,
                                           CUPTI_CBID_NVTX_nvtxDomainRangePop,
                                           CUPTI_CBID_NVTX_nvtxRangeStartA,
                                           CUPTI_CBID_NVTX_nvtxRangeStartW,
                                           CUPTI_CBID_NVTX_nvtxRangeStartEx,
                                           CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
                                           CUPTI_CBID_NVTX_nvtxRangeEnd,
                                           CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
                                           CUPTI_CBID_NVTX_nvtxDomainCreateA,
                                           CUPTI_CBID_NVTX_nvtxDomainCreateW,
                                           CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
                                           CUPTI_CBID_NVTX_nvtxDomainRegisterStringW};

// nvtxDomainCreateW's parameters, which CUPTI's header leaves out.
struct DomainCreateWParams {
  const wchar_t* name;
};

template <typename Params>
const Params& params_of(const CUpti_NvtxData& call) {
  return *static_cast<const Params*>(call.functionParams);
}

// A wide NVTX message (UTF-32 on Linux) as UTF-8; what is no code point becomes U+FFFD.
std::string utf8_of(const wchar_t* text) {
  std::string out;
  if (text == nullptr) return out;
  for (; *text != L'\0'; ++text) {
    auto c = static_cast<std::uint32_t>(*text);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

std::string text_of(const char* text) {
  return text ? std::string(text) : std::string();
}

// What a call that returns a value returned (CUPTI passes a pointer to it).
template <typename Value>
std::optional<Value> returned(const CUpti_NvtxData& call) {
  if (call.functionReturnValue == nullptr) return std::nullopt;
  Value value{};
  std::memcpy(&value, call.functionReturnValue, sizeof value);
  return value;
}

}  // namespace

std::span<const CUpti_CallbackId> NvtxRecorder::callbacks() noexcept {
  return kCallbacks;
}

NvtxRecorder::Record NvtxRecorder::from_attributes(const nvtxEventAttributes_t* attributes) const {
  Record record;
  if (attributes == nullptr) return record;
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      record.name = text_of(attributes->message.ascii);
      break;
    case NVTX_MESSAGE_TYPE_UNICODE:
      record.name = utf8_of(attributes->message.unicode);
      break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      if (const auto it = strings_.find(attributes->message.registered); it != strings_.end())
        record.name = it->second;
      break;
    default:
      break;
  }
  if (attributes->colorType == NVTX_COLOR_ARGB) record.color = attributes->color;
  record.category = attributes->category;
  return record;
}

// The four forms of a marking, pushing or starting call: a message in ASCII or
// wide, attributes, or attributes in a domain.
struct NvtxForms {
  CUpti_CallbackId ascii, wide, attributes;
};
constexpr NvtxForms kMarkForms{CUPTI_CBID_NVTX_nvtxMarkA, CUPTI_CBID_NVTX_nvtxMarkW,
                               CUPTI_CBID_NVTX_nvtxMarkEx};
constexpr NvtxForms kPushForms{CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushW,
                               CUPTI_CBID_NVTX_nvtxRangePushEx};
constexpr NvtxForms kStartForms{CUPTI_CBID_NVTX_nvtxRangeStartA, CUPTI_CBID_NVTX_nvtxRangeStartW,
                                CUPTI_CBID_NVTX_nvtxRangeStartEx};

template <typename Ascii, typename Wide, typename Attributes, typename InDomain>
NvtxRecorder::Record NvtxRecorder::described(CUpti_CallbackId cbid, const NvtxForms& forms,
                                             const CUpti_NvtxData& call) const {
  Record record;
  if (cbid == forms.ascii) {
    record.name = text_of(params_of<Ascii>(call).message);
  } else if (cbid == forms.wide) {
    record.name = utf8_of(params_of<Wide>(call).message);
  } else if (cbid == forms.attributes) {
    record = from_attributes(params_of<Attributes>(call).eventAttrib);
  } else {
    const auto& p = params_of<InDomain>(call);
    record = from_attributes(p.core.eventAttrib);
    record.domain = p.domain;
  }
  return record;
}

void NvtxRecorder::on_callback(CUpti_CallbackId cbid, const CUpti_NvtxData& call) noexcept {
  if (!recording() || call.functionParams == nullptr) return;
  const std::uint64_t now = clock_();
  thread_local const std::uint32_t thread_id = cupti_thread_id();
  const auto at_now = [now](Record record) {
    record.start_ns = record.end_ns = now;
    record.thread_id = thread_id;
    return record;
  };
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxMarkA:
      case CUPTI_CBID_NVTX_nvtxMarkW:
      case CUPTI_CBID_NVTX_nvtxMarkEx:
      case CUPTI_CBID_NVTX_nvtxDomainMarkEx: {
        Record mark = at_now(described<nvtxMarkA_params, nvtxMarkW_params, nvtxMarkEx_params,
                                       nvtxDomainMarkEx_params>(cbid, kMarkForms, call));
        mark.kind = TraceKind::nvtx_mark;
        mark.id = next_id_++;
        finished(std::move(mark));
        break;
      }
      case CUPTI_CBID_NVTX_nvtxRangePushA:
      case CUPTI_CBID_NVTX_nvtxRangePushW:
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        push(thread_id,
             at_now(described<nvtxRangePushA_params, nvtxRangePushW_params, nvtxRangePushEx_params,
                              nvtxDomainRangePushEx_params>(cbid, kPushForms, call)));
        break;
      case CUPTI_CBID_NVTX_nvtxRangePop:
        pop(thread_id, nullptr, now);
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        pop(thread_id, params_of<nvtxDomainRangePop_params>(call).domain, now);
        break;
      case CUPTI_CBID_NVTX_nvtxRangeStartA:
      case CUPTI_CBID_NVTX_nvtxRangeStartW:
      case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
        if (const std::optional<nvtxRangeId_t> id = returned<nvtxRangeId_t>(call))
          start(*id, at_now(described<nvtxRangeStartA_params, nvtxRangeStartW_params,
                                      nvtxRangeStartEx_params, nvtxDomainRangeStartEx_params>(
                         cbid, kStartForms, call)));
        break;  // without an id there is nothing to end it by
      case CUPTI_CBID_NVTX_nvtxRangeEnd:
        end(params_of<nvtxRangeEnd_params>(call).id, now);
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
        end(params_of<nvtxDomainRangeEnd_params>(call).core.id, now);
        break;
      case CUPTI_CBID_NVTX_nvtxDomainCreateA:
        if (const auto handle = returned<nvtxDomainHandle_t>(call))
          domains_[*handle] = text_of(params_of<nvtxDomainCreateA_params>(call).name);
        break;
      case CUPTI_CBID_NVTX_nvtxDomainCreateW:
        if (const auto handle = returned<nvtxDomainHandle_t>(call))
          domains_[*handle] = utf8_of(params_of<DomainCreateWParams>(call).name);
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
        if (const auto handle = returned<nvtxStringHandle_t>(call))
          strings_[*handle] = text_of(params_of<nvtxDomainRegisterStringA_params>(call).string);
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRegisterStringW:
        // CUPTI's header declares the string char; NVTX passes wchar_t.
        if (const auto handle = returned<nvtxStringHandle_t>(call))
          strings_[*handle] = utf8_of(reinterpret_cast<const wchar_t*>(
              params_of<nvtxDomainRegisterStringW_params>(call).string));
        break;
      default:
        break;
    }
  } catch (...) {  // no memory: the range or mark goes unrecorded, counted
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

void NvtxRecorder::push(std::uint32_t thread_id, Record range) {
  range.id = next_id_++;
  pushed_[thread_id].push_back(std::move(range));
}

// NVTX keeps a push/pop stack per thread and domain; a pop with nothing pushed
// (pushed before tracing began) is dropped, as CUPTI drops its end marker.
void NvtxRecorder::pop(std::uint32_t thread_id, nvtxDomainHandle_t domain, std::uint64_t now) {
  const auto stack = pushed_.find(thread_id);
  if (stack == pushed_.end()) return;
  std::vector<Record>& ranges = stack->second;
  const auto open = std::find_if(ranges.rbegin(), ranges.rend(),
                                 [domain](const Record& r) { return r.domain == domain; });
  if (open == ranges.rend()) return;
  Record range = std::move(*open);
  ranges.erase(std::next(open).base());
  range.end_ns = std::max(now, range.start_ns);
  finished(std::move(range));
}

void NvtxRecorder::start(nvtxRangeId_t id, Record range) {
  range.id = next_id_++;
  started_[id] = std::move(range);
}

void NvtxRecorder::end(nvtxRangeId_t id, std::uint64_t now) {
  const auto open = started_.find(id);
  if (open == started_.end()) return;  // started before tracing began
  Record range = std::move(open->second);
  started_.erase(open);
  range.end_ns = std::max(now, range.start_ns);
  finished(std::move(range));
}

void NvtxRecorder::finished(Record record) {
  if (done_.size() >= kMaxPending) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  done_.push_back(std::move(record));
}

TraceEvent NvtxRecorder::event_of(Record record) const {
  TraceEvent e;
  e.kind = record.kind;
  e.name = std::move(record.name);
  e.start_ns = record.start_ns;
  e.end_ns = record.end_ns;
  e.process_id = static_cast<std::uint32_t>(getpid());
  e.thread_id = record.thread_id;
  std::string domain;  // the default domain has no name
  if (record.domain != nullptr)
    if (const auto it = domains_.find(record.domain); it != domains_.end()) domain = it->second;
  e.details = nvtx_details(std::move(domain), record.category, record.color, record.id);
  return e;
}

std::vector<TraceEvent> NvtxRecorder::take() {
  std::vector<TraceEvent> events;
  std::lock_guard<std::mutex> lock(mutex_);
  events.reserve(done_.size());
  for (Record& record : done_) events.push_back(event_of(std::move(record)));
  done_.clear();
  return events;
}

std::vector<TraceEvent> NvtxRecorder::take_open(std::uint64_t now_ns) {
  std::vector<TraceEvent> events;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto close = [&](Record& range) {
    events.push_back(event_of(std::move(range)));
    end_unclosed(events.back(), now_ns);
  };
  for (auto& [thread, ranges] : pushed_)
    for (Record& range : ranges) close(range);
  for (auto& [id, range] : started_) close(range);
  pushed_.clear();
  started_.clear();
  return events;
}

void NvtxRecorder::keep_records_out_of_forked_children() {
  hold_across_fork(mutex_, [this] {
    done_.clear();
    pushed_.clear();
    started_.clear();
  });
}

}  // namespace timeroof::inject
