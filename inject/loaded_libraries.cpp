#include "inject/loaded_libraries.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <string_view>
#include <utility>

#include "core/versions.hpp"
#include "inject/files.hpp"

namespace timeroof::inject {
namespace {

// A family's library file names start with `prefix` ("libcudnn.so" is cuDNN's
// main library, not its sub-libraries libcudnn_ops.so and the like).
struct Family {
  const char* name;
  const char* prefix;
  std::string (*version)(void* handle);
};

template <typename Function>
Function symbol(void* handle, const char* name) {
  return reinterpret_cast<Function>(dlsym(handle, name));
}

// A call(int*) that returns 0 on success and the version through its argument.
std::string version_from(void* handle, const char* name, std::string (*format)(int)) {
  const auto call = symbol<int (*)(int*)>(handle, name);
  int version = 0;
  if (call == nullptr || call(&version) != 0) return {};
  return format(version);
}

// cuBLAS, cuBLASLt and cuDNN name their version by CUDA's libraryPropertyType
// (MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2).
std::string version_by_property(void* handle, const char* name) {
  const auto call = symbol<int (*)(int, int*)>(handle, name);
  if (call == nullptr) return {};
  std::string version;
  for (int property = 0; property < 3; ++property) {
    int value = 0;
    if (call(property, &value) != 0) return {};
    version += (property ? "." : "") + std::to_string(value);
  }
  return version;
}

const Family kFamilies[] = {
    {"cuda", "libcuda.so",
     [](void* h) { return version_from(h, "cuDriverGetVersion", cuda_version_text); }},
    {"cudart", "libcudart.so",
     [](void* h) { return version_from(h, "cudaRuntimeGetVersion", cuda_version_text); }},
    {"cublas", "libcublas.so", [](void* h) { return version_by_property(h, "cublasGetProperty"); }},
    {"cublasLt", "libcublasLt.so",
     [](void* h) { return version_by_property(h, "cublasLtGetProperty"); }},
    {"cudnn", "libcudnn.so", [](void* h) { return version_by_property(h, "cudnnGetProperty"); }},
    // NCCL 2.9 and later: 10000 * major + 100 * minor + patch.
    {"nccl", "libnccl.so",
     [](void* h) {
       return version_from(h, "ncclGetVersion", [](int v) {
         return major_minor_patch_text(static_cast<std::size_t>(v));
       });
     }},
    // CUPTI's API version (cupti_version.h), what it reports.
    {"cupti", "libcupti.so",
     [](void* h) {
       return version_from(h, "cuptiGetVersion", [](int v) { return std::to_string(v); });
     }},
};

const Family* family_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  const std::string_view file = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (const Family& family : kFamilies)
    if (file.starts_with(family.prefix)) return &family;
  return nullptr;
}

}  // namespace

std::vector<LoadedLibrary> loaded_cuda_libraries() {
  using Found = std::vector<std::pair<std::string, const Family*>>;  // path, its family
  Found found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        if (!info->dlpi_name || !*info->dlpi_name) return 0;
        if (const Family* family = family_of(info->dlpi_name))
          static_cast<Found*>(out)->emplace_back(info->dlpi_name, family);
        return 0;
      },
      &found);
  std::vector<LoadedLibrary> libraries;
  for (const auto& [path, family] : found) {
    LoadedLibrary library;
    library.name = family->name;
    library.path = path;
    library.process_id = static_cast<std::uint32_t>(getpid());
    // NOLOAD: a handle to what is loaded already, never a load.
    if (void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
      library.version = family->version(handle);
      dlclose(handle);
    }
    libraries.push_back(std::move(library));
  }
  return libraries;
}

void write_loaded_libraries(const std::string& directory,
                            const std::vector<LoadedLibrary>& libraries) {
  const std::string path = directory + "/libraries-" + std::to_string(getpid()) + ".json";
  write_all(open_for_writing(path, O_TRUNC), nlohmann::json(libraries).dump() + "\n", path);
}

}  // namespace timeroof::inject
