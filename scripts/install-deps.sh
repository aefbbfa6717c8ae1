#!/usr/bin/env bash
# Installs the distribution packages timeroof builds with (Debian 12+ / Ubuntu 22.04+):
# what the main job needs, and with --tests also the test tools (scripts/test.sh).
# The NVIDIA driver, CUDA toolkit and cuDNN are prerequisites installed by the
# user; without them the analysis-only tool is built and this script says so.
set -euo pipefail

packages=(cmake ninja-build g++ pkg-config git libeigen3-dev nlohmann-json3-dev libcli11-dev
          libsqlite3-dev libtomlplusplus-dev zlib1g-dev)
if [ "${1:-}" = --tests ]; then
  packages+=(libgtest-dev libgmock-dev python3
             libxml2-utils librsvg2-bin chromium  # chart and report tests: xmllint, rsvg-convert, headless chromium
             zsh groff-base                       # the completion scripts and man page, checked by their shells
             clang libclang-rt-dev llvm)          # sanitizer build and fuzz targets: ASan, UBSan, libFuzzer, llvm-symbolizer
elif [ $# -gt 0 ]; then
  echo "usage: scripts/install-deps.sh [--tests]" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "timeroof: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  # Ubuntu 22.04 ships clang's runtimes in libclang-common-*-dev and has no libclang-rt-dev.
  if [[ " ${missing[*]} " == *" libclang-rt-dev "* ]] && ! apt-cache show libclang-rt-dev >/dev/null 2>&1; then
    kept=()
    for p in "${missing[@]}"; do [ "$p" = libclang-rt-dev ] || kept+=("$p"); done
    missing=("${kept[@]}")
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda_home/bin/nvcc" ] && ! command -v nvcc >/dev/null; then
  echo "timeroof: no CUDA toolkit at $cuda_home: building the analysis-only tool" \
       "(install the CUDA toolkit and cuDNN 9 to measure GPUs)" >&2
elif [ ! -f "$cuda_home/include/cudnn.h" ] && [ ! -f /usr/include/cudnn.h ] \
     && [ ! -f /usr/include/x86_64-linux-gnu/cudnn.h ]; then
  echo "timeroof: CUDA found but no cuDNN headers: building the analysis-only tool" \
       "(install cuDNN 9, e.g. the cudnn9-cuda-13 package)" >&2
fi
