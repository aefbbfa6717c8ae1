#!/usr/bin/env bash
# The CPU tier under AddressSanitizer + UndefinedBehaviorSanitizer, then a short run of
# each libFuzzer target (issue 16). scripts/test.sh calls it after the main tests.
# One clang build, analysis-only (no CUDA), in ./build-asan (or $TIMEROOF_ASAN_BUILD_DIR),
# kept between runs: the sanitized CPU tier (`ctest -LE gpu`) and the fuzz targets
# share it. Each target replays fuzz/regressions/<target>, then fuzzes for
# $TIMEROOF_FUZZ_SECONDS (default 30) from fuzz/corpus/<target> plus what earlier runs
# of this build directory found. A finding fails the script and names the input to fix
# and then commit under fuzz/regressions/<target>/. scripts/fuzz-long.sh runs longer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TIMEROOF_ASAN_BUILD_DIR:-$root/build-asan}
seconds=${TIMEROOF_FUZZ_SECONDS:-30}
skip_tests=${TIMEROOF_FUZZ_ONLY:-0}
jobs=$(nproc)

"$root/scripts/install-deps.sh" --tests
start=$SECONDS
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_COMPILER=clang++ -DTIMEROOF_WITH_CUDA=OFF -DTIMEROOF_FUZZ=ON \
        -DTIMEROOF_WARNINGS_AS_ERRORS=ON >/dev/null
fi
# halt_on_error: the first report fails the test; UBSan stops on UB (-fno-sanitize-recover).
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ "$skip_tests" = 1 ]; then
  cmake --build "$build" -j "$jobs" --target fuzz_targets
else
  cmake --build "$build" -j "$jobs"
  echo "timeroof: sanitized build took $((SECONDS - start)) s" >&2
  tier=$SECONDS
  ctest --test-dir "$build" -LE "gpu|package" --output-on-failure -j "$jobs"
  echo "timeroof: sanitized CPU tier (ASan + UBSan) took $((SECONDS - tier)) s" >&2
fi

fuzz_start=$SECONDS
status=0
for exe in "$build"/fuzz/fuzz_*; do
  [ -x "$exe" ] || continue
  t=${exe##*/fuzz_}
  corpus=$build/fuzz-corpus/$t
  artifacts=$build/fuzz-artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  regressions=("$root/fuzz/regressions/$t"/*)
  if [ -e "${regressions[0]}" ] && ! "$exe" "${regressions[@]}" >"$artifacts/replay.log" 2>&1; then
    echo "timeroof: fuzz target $t fails on a committed regression input:" >&2
    tail -n 40 "$artifacts/replay.log" >&2
    status=1
    continue
  fi
  # -timeout: an input slower than 10 s is a hang; -rss_limit_mb: one over 2 GiB a finding.
  if "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$artifacts/" "$corpus" "$root/fuzz/corpus/$t" >"$artifacts/fuzz.log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$artifacts/fuzz.log")
    echo "timeroof: fuzz target $t: ${runs:-?} inputs in ${seconds} s, no finding" >&2
  else
    echo "timeroof: fuzz target $t found a problem (fix it, then commit the input under" \
         "fuzz/regressions/$t/):" >&2
    grep -v '^#\|^INFO' "$artifacts/fuzz.log" | tail -n 40 >&2
    status=1
  fi
done
echo "timeroof: fuzzing took $((SECONDS - fuzz_start)) s" >&2
exit "$status"
