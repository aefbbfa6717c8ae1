# TIMEROOF_SANITIZE: ASan + UBSan for all host C++ (UB is fatal, so a test fails on it).
# TIMEROOF_FUZZ: adds libFuzzer's coverage instrumentation to every target too, so the
# fuzz targets in fuzz/ see the edges of the libraries they call.
include(CheckCXXCompilerFlag)
if(TIMEROOF_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "timeroof: TIMEROOF_FUZZ needs clang (libFuzzer), not "
                        "${CMAKE_CXX_COMPILER_ID}; configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  set(TIMEROOF_SANITIZE ON CACHE BOOL "" FORCE)
endif()
if(TIMEROOF_SANITIZE)
  set(timeroof_sanitize_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined
                              -fno-omit-frame-pointer)
  # Part of clang's `undefined`, not of gcc's.
  check_cxx_compiler_flag(-fsanitize=float-cast-overflow TIMEROOF_HAS_FLOAT_CAST_OVERFLOW)
  if(TIMEROOF_HAS_FLOAT_CAST_OVERFLOW)
    list(APPEND timeroof_sanitize_flags -fsanitize=float-cast-overflow)
  endif()
  if(TIMEROOF_FUZZ)
    list(APPEND timeroof_sanitize_flags -fsanitize=fuzzer-no-link)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${timeroof_sanitize_flags}>")
  add_link_options(${timeroof_sanitize_flags})
  if(TIMEROOF_HAVE_CUDA)
    message(WARNING "timeroof: sanitizers with the GPU layers are untested; "
                    "configure with -DTIMEROOF_WITH_CUDA=OFF for the CPU tier")
  endif()
endif()
