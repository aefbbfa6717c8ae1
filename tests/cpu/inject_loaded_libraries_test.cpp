// The CUDA libraries a profiled process loaded, with their versions
// (inject/loaded_libraries.hpp, #17), no GPU: the test loads cuBLAS and cuDNN as a
// program would, and the scan must find them, with the versions the headers this
// build compiled against name (the installed libraries are that release), and only
// what is loaded; then the file `timeroof profile` reads back.
#include "inject/loaded_libraries.hpp"

#include <cublas_api.h>
#include <cudnn_version.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "tests/support/run_tool.hpp"

namespace timeroof::inject {
namespace {

std::vector<LoadedLibrary> named(const std::vector<LoadedLibrary>& all, const std::string& name) {
  std::vector<LoadedLibrary> found;
  for (const LoadedLibrary& library : all)
    if (library.name == name) found.push_back(library);
  return found;
}

// A library loaded as a program loads it (RTLD_LOCAL, as PyTorch and Python do).
class Loaded {
 public:
  explicit Loaded(const std::string& path) : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {}
  ~Loaded() {
    if (handle_) dlclose(handle_);
  }
  Loaded(const Loaded&) = delete;
  Loaded& operator=(const Loaded&) = delete;
  bool ok() const { return handle_ != nullptr; }

 private:
  void* handle_;
};

TEST(LoadedLibraries, FindsWhatTheProcessLoadedWithTheVersionsTheyReport) {
  const Loaded cublas(std::string(TR_CUBLAS_DIR) + "/libcublas.so." +
                      std::to_string(CUBLAS_VER_MAJOR));
  const Loaded cudnn(std::string(TR_CUDNN_DIR) + "/libcudnn.so." + std::to_string(CUDNN_MAJOR));
  ASSERT_TRUE(cublas.ok()) << dlerror();
  ASSERT_TRUE(cudnn.ok()) << dlerror();
  const std::vector<LoadedLibrary> all = loaded_cuda_libraries();

  const std::string cublas_version = std::to_string(CUBLAS_VER_MAJOR) + "." +
                                     std::to_string(CUBLAS_VER_MINOR) + "." +
                                     std::to_string(CUBLAS_VER_PATCH);
  const auto blas = named(all, "cublas");
  ASSERT_EQ(blas.size(), 1u);
  EXPECT_TRUE(blas[0].path.ends_with("/libcublas.so." + std::to_string(CUBLAS_VER_MAJOR)))
      << blas[0].path;
  EXPECT_EQ(blas[0].version, cublas_version);
  EXPECT_EQ(blas[0].process_id, static_cast<std::uint32_t>(getpid()));
  // cuBLASLt came with cuBLAS, of the same release; its own family, not cuBLAS's.
  const auto lt = named(all, "cublasLt");
  ASSERT_EQ(lt.size(), 1u);
  EXPECT_TRUE(lt[0].path.ends_with("/libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR)))
      << lt[0].path;
  EXPECT_EQ(lt[0].version, cublas_version);

  // cuDNN's main library once; its sub-libraries (libcudnn_graph.so.9, loaded
  // with it) are not cuDNN entries.
  const auto dnn = named(all, "cudnn");
  ASSERT_EQ(dnn.size(), 1u);
  EXPECT_TRUE(dnn[0].path.ends_with("/libcudnn.so." + std::to_string(CUDNN_MAJOR))) << dnn[0].path;
  EXPECT_EQ(dnn[0].version, std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "." +
                                std::to_string(CUDNN_PATCHLEVEL));

  // Nothing loaded NCCL: the scan loads nothing itself.
  EXPECT_TRUE(named(all, "nccl").empty());
  for (const LoadedLibrary& library : all) EXPECT_FALSE(library.path.empty()) << library.name;
}

TEST(LoadedLibraries, WrittenAsTheJsonArrayProfileReads) {
  test::TempDir dir;
  const std::vector<LoadedLibrary> libraries = {
      {"cudnn", "/site-packages/nvidia/cudnn/lib/libcudnn.so.9", "9.10.2", 41},
      {"nccl", "/usr/lib/libnccl.so.2", "", 41}};
  write_loaded_libraries(dir.path(), libraries);
  const std::string path = dir.file("libraries-" + std::to_string(getpid()) + ".json");
  const nlohmann::json written = nlohmann::json::parse(test::read_file(path));
  EXPECT_EQ(written.get<std::vector<LoadedLibrary>>(), libraries);
  // Written again at a later exit of the same process: replaced, not appended.
  write_loaded_libraries(dir.path(), {libraries[0]});
  EXPECT_EQ(nlohmann::json::parse(test::read_file(path)).size(), 1u);

  EXPECT_THROW(write_loaded_libraries(dir.file("no-such-directory"), libraries), Error);
}

}  // namespace
}  // namespace timeroof::inject
