#include "gpu/nccl.hpp"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>

#include "gpu/check.hpp"

namespace timeroof {

namespace {
// The NCCL 2.x ABI subset used here.
using ncclResult_t = int;
using ncclComm_t = void*;
constexpr ncclResult_t kNcclSuccess = 0;
constexpr int kNcclFloat32 = 7;  // ncclDataType_t
constexpr int kNcclSum = 0;      // ncclRedOp_t

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

// Where pip's nvidia-nccl-cu12 / -cu13 packages put the library.
std::vector<std::string> pip_candidates() {
  std::vector<std::string> found;
  for (const char* pattern : {"/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
                              "/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
                              "/usr/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
                              "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2"}) {
    glob_t matches{};
    if (glob(pattern, 0, nullptr, &matches) == 0)
      for (std::size_t i = 0; i < matches.gl_pathc; ++i) found.emplace_back(matches.gl_pathv[i]);
    globfree(&matches);
  }
  return found;
}
}  // namespace

// The NCCL check helper: throws GpuError with the call, file, line and NCCL's message.
#define TR_NCCL_CHECK(nccl, call) (nccl).check((call), #call, __FILE__, __LINE__)

Nccl::Nccl() {
  std::vector<std::string> candidates;
  if (const char* chosen = std::getenv("TIMEROOF_NCCL_LIBRARY")) candidates.emplace_back(chosen);
  candidates.emplace_back("libnccl.so.2");
  for (const std::string& path : pip_candidates()) candidates.push_back(path);
  for (const std::string& path : candidates) {
    library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library_ && symbol<void*>(library_, "ncclAllReduce")) {
      path_ = path;
      return;
    }
    if (library_) dlclose(library_);
    library_ = nullptr;
  }
  why_ =
      "NCCL not found (tried TIMEROOF_NCCL_LIBRARY, libnccl.so.2 on the library path and "
      "pip's nvidia-nccl packages); install libnccl2 or set TIMEROOF_NCCL_LIBRARY";
}

Nccl::~Nccl() {
  if (library_) dlclose(library_);
}

void Nccl::check(int status, const char* call, const char* file, int line) const {
  if (status == kNcclSuccess) return;
  auto message = symbol<const char* (*)(ncclResult_t)>(library_, "ncclGetErrorString");
  check_detail::fail("NCCL", status, message ? message(status) : "unknown", call, file, line);
}

std::string Nccl::version() const {
  auto get = symbol<ncclResult_t (*)(int*)>(library_, "ncclGetVersion");
  int code = 0;
  if (!get || get(&code) != kNcclSuccess) return "?";
  // 2.x from 2.9 on: major x 10000 + minor x 100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

Nccl::Communicators::Communicators(const Nccl& nccl, const std::vector<int>& devices)
    : nccl_(nccl), devices_(devices), comms_(devices.size(), nullptr) {
  auto init =
      symbol<ncclResult_t (*)(ncclComm_t*, int, const int*)>(nccl.library_, "ncclCommInitAll");
  TR_NCCL_CHECK(nccl, init(comms_.data(), static_cast<int>(devices.size()), devices.data()));
}

Nccl::Communicators::~Communicators() {
  auto destroy = symbol<ncclResult_t (*)(ncclComm_t)>(nccl_.library_, "ncclCommDestroy");
  for (void* comm : comms_)
    if (comm && destroy) destroy(comm);
}

void Nccl::Communicators::all_reduce(const std::vector<float*>& buffers, std::size_t count,
                                     const std::vector<cudaStream_t>& streams) const {
  auto group_start = symbol<ncclResult_t (*)()>(nccl_.library_, "ncclGroupStart");
  auto group_end = symbol<ncclResult_t (*)()>(nccl_.library_, "ncclGroupEnd");
  auto all_reduce =
      symbol<ncclResult_t (*)(const void*, void*, std::size_t, int, int, ncclComm_t, cudaStream_t)>(
          nccl_.library_, "ncclAllReduce");
  TR_NCCL_CHECK(nccl_, group_start());
  for (std::size_t i = 0; i < comms_.size(); ++i)
    TR_NCCL_CHECK(nccl_, all_reduce(buffers[i], buffers[i], count, kNcclFloat32, kNcclSum,
                                    comms_[i], streams[i]));
  TR_NCCL_CHECK(nccl_, group_end());
}

}  // namespace timeroof
