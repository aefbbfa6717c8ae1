#!/usr/bin/env bash
# The timing issue's benchmark (issue 13, "Benchmark"): runs ON THE DEVICE MACHINE, in
# the repository root, from binaries packed here by scripts/device/pack.sh into .carry/.
#
#   1. nvidia-smi: GPU, driver, clocks, power;
#   2. run 1 and run 2, minutes apart, each into its own store (--no-counters):
#        timeroof sweep conv2d --batch 1..1024:x2 --precision fp16,fp32 --direction fwd
#        timeroof sweep lstm   --batch 1..1024:x2 --precision fp16,fp32 --pass inference
#                              --algorithm standard,persist_static_small_h
#      and `timeroof export` of each (run1.json, run2.json). The LSTM series also runs
#      persist_static_small_h because that is the algorithm PyTorch picks for hidden
#      16 (its get_algo rule): the exact match for T_graph's same-kernel comparison;
#      the standard points are compared as "relaxed" rows, not judged;
#   3. scripts/device/torch_reference.py: the same shapes through PyTorch (+ a
#      cudnn.benchmark=True conv pass), calls per sample taken from run 1's export;
#   4. .carry/runner_vs_bare, if packed (its output to runner_vs_bare.log);
#   5. scripts/device/timing_compare.py: the ratios; its report is printed last.
# Everything (exports, torch.json, compare.json, logs) goes into one archive,
# $OUT/timing-benchmark.tgz, with the report beside it as $OUT/timing-compare.txt.
# A failing step is reported (with its log's last lines) and the rest still runs; the
# exit status is 1 if any step failed, 0 otherwise (the targets are judged in the
# report, PASS/MISS per line, not by the exit status).
#
# Libraries: PyTorch's wheels bring their own cuDNN (9.19 on the H100 machine) and
# cuBLAS, the system has cuDNN 9.14. By default (TIMING_LIBS=torch) every timeroof
# binary here runs with PyTorch's libcudnn*.so.9 and libcublas*.so.13 (symlinked into
# one folder put first in LD_LIBRARY_PATH; CUPTI and the rest stay the system's), so
# both sides pick kernels with the same heuristics and the T_graph comparison has
# same-kernel points to judge; TIMING_LIBS=system keeps the system's libraries (what the
# bundled samples use). machine.txt shows what the binary resolved; the report's header
# shows the cuDNN each side loaded.
#
# Settings (environment, defaults in brackets):
#   TIMING_BUDGET_S         whole script [450]; each step is cut to what is left
#                           (about 3 minutes on an H100 with everything packed)
#   TIMING_LIBS             torch | system [torch], see "Libraries"
#   TIMING_BATCHES          [1..1024:x2]
#   TIMING_LSTM_ALGORITHMS  [standard,persist_static_small_h]
#   TIMING_CONV_EXTRA       extra conv2d sweep flags, e.g. "--cudnn-api graph,legacy" []
#   TIMING_BARE_ROUNDS      runner_vs_bare --rounds [3]
#   TIMING_TORCH_EXTRA      extra torch_reference.py flags [--benchmark-pass]
#   TIMING_CARRY_DIR        where timeroof and runner_vs_bare are [.carry]
#   PYTHON                  [python3]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
final=${OUT:-$root/device-out}
mkdir -p "$final"
work=$(mktemp -d)
python_env=(env "LD_LIBRARY_PATH=${LD_LIBRARY_PATH-}")  # PyTorch as it is installed: its own CUDA libraries
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

budget=${TIMING_BUDGET_S:-450}
batches=${TIMING_BATCHES:-1..1024:x2}
lstm_algorithms=${TIMING_LSTM_ALGORITHMS:-standard,persist_static_small_h}
conv_extra=${TIMING_CONV_EXTRA:-}
bare_rounds=${TIMING_BARE_ROUNDS:-3}
torch_extra=${TIMING_TORCH_EXTRA:---benchmark-pass}
python=${PYTHON:-python3}
libs=${TIMING_LIBS:-torch}
carry=${TIMING_CARRY_DIR:-.carry}
tool=$carry/timeroof
reserve=25  # seconds kept for the compare and the archive
t_start=$(date +%s)
failed=()
steps=()

left() { echo $((budget - ($(date +%s) - t_start) - reserve)); }

# step NAME CAP LOG CMD...: CMD under `timeout` (SIGINT first: a sweep stores its
# current point and exits 3), at most CAP seconds and never past the budget.
step() {
  local name=$1 cap=$2 log=$3
  shift 3
  local limit
  limit=$(left)
  ((cap < limit)) && limit=$cap
  if ((limit < 5)); then
    echo "== $name: SKIPPED (the ${budget} s budget is spent)"
    failed+=("$name: skipped, no time left")
    steps+=("$(printf '%-22s skipped (no time left)' "$name")")
    return 1
  fi
  local t0 rc took why
  t0=$(date +%s)
  timeout --signal=INT --kill-after=15 "$limit" "$@" > "$log" 2>&1
  rc=$?
  took=$(($(date +%s) - t0))
  if ((rc == 0)); then
    echo "== $name: ok in ${took} s"
  else
    why="exit $rc"
    ((rc == 124 || rc == 137)) && why="timed out after ${limit} s (exit $rc)"
    echo "== $name: FAILED ($why, ${took} s); last lines of $(basename "$log"):"
    tail -n 6 "$log" | sed 's/^/    /'
    failed+=("$name: $why")
  fi
  steps+=("$(printf '%-22s exit %-3s %4s s  %s' "$name" "$rc" "$took" "$(basename "$log")")")
  return $rc
}

echo "== machine"
{
  date -u
  hostname
  nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,power.limit,temperature.gpu,persistence_mode --format=csv
  nvidia-smi --query-gpu=clocks.applications.graphics,clocks.applications.memory,clocks_throttle_reasons.active --format=csv 2>/dev/null
  "$python" --version
  nproc
} > "$work/machine.txt" 2>&1
cat "$work/machine.txt"
nvidia-smi -q -d CLOCK,PERFORMANCE > "$work/nvidia-smi-clocks.txt" 2>&1

# The libraries the timeroof binaries run with (see "Libraries" above).
tr_env=(env "LD_LIBRARY_PATH=$LD_LIBRARY_PATH")
if [ "$libs" = torch ]; then
  wheels=$("$python" -c 'import os, nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null)
  if [ -n "$wheels" ] && ls "$wheels"/cudnn/lib/libcudnn*.so.9 > /dev/null 2>&1; then
    mkdir -p "$work/torch-libs"
    ln -s "$wheels"/cudnn/lib/libcudnn*.so.9 "$work/torch-libs/"
    ln -s "$wheels"/cu13/lib/libcublas*.so.13 "$work/torch-libs/" 2> /dev/null
    tr_env=(env "LD_LIBRARY_PATH=$work/torch-libs:$LD_LIBRARY_PATH")
    echo "timeroof runs with PyTorch's cuDNN and cuBLAS ($wheels; TIMING_LIBS=system to keep the system's)"
  else
    echo "TIMING_LIBS=torch: PyTorch's cuDNN not found under '$wheels'; timeroof keeps the system's libraries"
    libs=system
  fi
fi
if [ -x "$tool" ]; then
  echo "libraries of $tool (TIMING_LIBS=$libs):" >> "$work/machine.txt"
  "${tr_env[@]}" ldd "$tool" 2>&1 | grep -E "not found|cudnn|cublas|cupti|cudart" >> "$work/machine.txt"
fi

# 2. Two runs of the same points.
for run in 1 2; do
  db=$work/run$run.db
  if [ ! -x "$tool" ]; then
    echo "== run $run: FAILED ($tool is missing: run scripts/device/pack.sh here and carry .carry)"
    failed+=("run $run: $tool missing")
    steps+=("$(printf '%-22s not run (%s missing)' "run $run" "$tool")")
    continue
  fi
  # shellcheck disable=SC2086  # TIMING_CONV_EXTRA is a list of flags
  step "run $run conv2d" 120 "$work/run$run-conv2d.log" \
    "${tr_env[@]}" "$tool" sweep conv2d --batch "$batches" --precision fp16,fp32 --direction fwd $conv_extra \
    --no-counters --db "$db"
  step "run $run lstm" 170 "$work/run$run-lstm.log" \
    "${tr_env[@]}" "$tool" sweep lstm --batch "$batches" --precision fp16,fp32 --pass inference \
    --algorithm "$lstm_algorithms" --no-counters --db "$db"
  if [ -f "$db" ]; then
    step "run $run export" 60 "$work/run$run-export.log" "${tr_env[@]}" "$tool" export --db "$db" --out "$work/run$run.json"
  else
    echo "== run $run export: FAILED (no store: both sweeps of run $run failed)"
    failed+=("run $run export: no store")
  fi
done

# 3. PyTorch on the same shapes; its own time limit ends it cleanly before the step's.
torch_args=()
[ -s "$work/run1.json" ] && torch_args+=(--timeroof-export "$work/run1.json")
torch_limit=$(left)
((torch_limit > 240)) && torch_limit=240
# shellcheck disable=SC2086  # TIMING_TORCH_EXTRA is a list of flags
step "pytorch reference" "$torch_limit" "$work/torch.log" \
  "${python_env[@]}" "$python" scripts/device/torch_reference.py --out "$work/torch.json" --batches "$batches" \
  $torch_extra "${torch_args[@]}" \
  --time-limit-s $((torch_limit > 40 ? torch_limit - 25 : 15))
grep -E '^torch_reference:' "$work/torch.log" | sed 's/^/    /'

# 4. The runner against a bare loop of the same call.
compare_args=()
if [ -x "$carry/runner_vs_bare" ]; then
  step "runner_vs_bare" 120 "$work/runner_vs_bare.log" "${tr_env[@]}" "$carry/runner_vs_bare" --rounds "$bare_rounds"
  compare_args+=(--bare "$work/runner_vs_bare.log")
  grep -E '^(same operator|separate operators|beyond)' "$work/runner_vs_bare.log" | sed 's/^/    /'
else
  echo "== runner_vs_bare: not in $carry (not run)"
  steps+=("$(printf '%-22s not packed' runner_vs_bare)")
fi

# 5. The ratios.
reserve=0
step "compare" 60 "$work/compare.txt" \
  "$python" scripts/device/timing_compare.py "$work/run1.json" "$work/run2.json" "$work/torch.json" \
  "${compare_args[@]}" --json "$work/compare.json"

tar czf "$final/timing-benchmark.tgz" -C "$work" --exclude='*.db' --exclude='*.db-*' --exclude=torch-libs . ||
  failed+=("archive: tar failed")
cp "$work/compare.txt" "$final/timing-compare.txt" 2>/dev/null || true

echo "== steps (wall $(($(date +%s) - t_start)) s of a ${budget} s budget; logs in $final/timing-benchmark.tgz)"
printf '    %s\n' "${steps[@]}"
if ((${#failed[@]})); then
  echo "== FAILED steps: ${#failed[@]}"
  printf '    %s\n' "${failed[@]}"
fi
echo
cat "$work/compare.txt"
((${#failed[@]} == 0))
