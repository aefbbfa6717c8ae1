# Third-party dependencies. Host-only packages come from the distribution
# (scripts/install-deps installs them); CUDA, CUPTI, cuBLAS and cuDNN from the
# CUDA toolkit. Without a toolkit the analysis-only tool is built instead.

find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 2.0 REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(ZLIB REQUIRED)  # gzip exports and the bundled samples (core/gzip)
find_package(Threads REQUIRED)

set(TIMEROOF_HAVE_CUDA OFF)
# What the analysis-only tool does, for the warnings below (README.md says the same).
set(TIMEROOF_ANALYSIS_COMMANDS
    "report, analyze, compare, export, import, runs, merge, sweep --dry-run; run shows the sample")
if(TIMEROOF_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit 12.0 QUIET)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    find_path(CUDNN_INCLUDE_DIR cudnn.h
              HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV CUDNN_ROOT PATH_SUFFIXES include)
    find_library(CUDNN_LIBRARY cudnn
                 HINTS ${CUDAToolkit_LIBRARY_DIR} ENV CUDNN_ROOT PATH_SUFFIXES lib64 lib)
    if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND TARGET CUDA::cupti)
      set(TIMEROOF_HAVE_CUDA ON)
    else()
      message(WARNING "timeroof: CUDA toolkit found but cuDNN or CUPTI is missing "
                      "(cudnn.h: ${CUDNN_INCLUDE_DIR}, libcudnn: ${CUDNN_LIBRARY}); "
                      "building the analysis-only tool (${TIMEROOF_ANALYSIS_COMMANDS}). "
                      "Install cuDNN 9 to get the GPU layers.")
    endif()
  else()
    message(WARNING "timeroof: no CUDA toolkit found; building the analysis-only tool "
                    "(${TIMEROOF_ANALYSIS_COMMANDS}). Install the CUDA toolkit to measure GPUs.")
  endif()
endif()

if(TIMEROOF_HAVE_CUDA)
  # Ampere and Hopper; kernels that need Hopper-only instructions add sm_90a themselves.
  # Set before enable_language(CUDA), which otherwise caches nvcc's own default
  # (sm_75 for nvcc 13: no bf16 tensor cores, and everything JIT-compiled on the GPU).
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90 CACHE STRING "CUDA architectures to build for")
  endif()
  enable_language(CUDA)
  # C++20 in device code too (the data model is shared). CMake 3.25 does not
  # know nvcc's C++20 flag; nvcc 12+ accepts -std=c++20.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  # One CUDA runtime per process: the shared one the C++ code links (CUDA::cudart),
  # not CMake's default static runtime for CUDA targets as well.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  add_library(timeroof_cudnn INTERFACE)
  target_include_directories(timeroof_cudnn SYSTEM INTERFACE ${CUDNN_INCLUDE_DIR})
  target_link_libraries(timeroof_cudnn INTERFACE ${CUDNN_LIBRARY})
  message(STATUS "timeroof: CUDA ${CUDAToolkit_VERSION}, cuDNN ${CUDNN_LIBRARY}")
endif()
