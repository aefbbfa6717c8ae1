#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE (issue 18): timeroof's sweeps of the shapes set beside
# PyTorch, then the *_torch_compare.py scripts on their export (T_stream / PyTorch per
# shape, the kernels each side ran, the verdict where they are the same), and the
# model tables. Parts, in the order given (default: all, most wanted first):
#   gemm       scripts/device/torch_compare_gemm.toml (no counters) + gemm_torch_compare.py
#   attention  the default attention sweep (no counters) + attention_torch_compare.py
#   models     ceilings --quick, then `run --model bert_base_512` and `--model lstm_paper`
#              (their default batches, counters on) with the model summary each prints
#   norms      default layernorm and batchnorm sweeps + norm_torch_compare.py
#   memory     default pointwise, softmax and pool sweeps + memory_bound_torch_compare.py
# Binary: $TIMEROOF, else .carry/timeroof (scripts/device/pack.sh), else the bundle
# beside this script (a helper's hpack.sh carry: bundle.tar.xz unpacked into bin/).
# What comes back ($OUT, a few files: the device tool returns at most 8): summary.txt
# (every table, verdict and model summary), logs.tgz (one log per step, the comparisons'
# rows as JSON; rewritten after each part) and each part's store exported (xz).
# TORCH_COMPARE_BUDGET_S (default 225): no step starts past it; each is cut at it.
# TORCH_COMPARE_ARGS: more flags for the comparison scripts (e.g. --load-s 1).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null || pwd)
cd "$root" || exit 2
final=${OUT:-$root/device-out}
work=$(mktemp -d)
logs=$work/logs
mkdir -p "$final" "$logs"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TIMEROOF_MODELS=${TIMEROOF_MODELS:-$root/sweeps/models}  # the binary's own path is this machine's
if [ -z "${TIMEROOF:-}" ]; then
  if [ -x .carry/timeroof ]; then
    TIMEROOF=$root/.carry/timeroof
  else
    mkdir -p "$here/bin" && tar xJf "$here/bundle.tar.xz" -C "$here/bin" && TIMEROOF=$here/bin/timeroof
  fi
fi
budget=${TORCH_COMPARE_BUDGET_S:-225}
summary=$final/summary.txt
say() { echo "$*" | tee -a "$summary"; }

# step NAME LIMIT_S CMD...: CMD's output into $logs/NAME.log, cut at the budget.
step() {
  local name=$1 limit=$2 left rc t0=$SECONDS
  shift 2
  left=$((budget - SECONDS))
  if [ "$left" -lt 10 ]; then
    say "== $name: not run (budget of $budget s spent)"
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  timeout "$limit" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  say "== $name: rc $rc, $((SECONDS - t0)) s$([ "$rc" -eq 124 ] && echo " (cut at $limit s)")"
  return $rc
}

# compare NAME SCRIPT SWEEP...: the sweeps (no counters) into a store of their own,
# exported, then SCRIPT on the export.
compare() {
  local name=$1 script=$2 sweep
  shift 2
  for sweep in "$@"; do
    step "$name-sweep-$(basename "$sweep" .toml)" 90 \
      "$TIMEROOF" sweep "$sweep" --no-counters --db "$work/$name.db"
  done
  step "$name-export" 30 "$TIMEROOF" export --db "$work/$name.db" --out "$work/$name.json" || return 1
  # shellcheck disable=SC2086  # extra flags, word-split on purpose (e.g. --load-s 1)
  step "$name-compare" 120 python3 "$here/$script" "$work/$name.json" --json "$logs/$name-rows.json" \
    ${TORCH_COMPARE_ARGS:-}
  grep -v '^$' "$logs/$name-compare.log" | tee -a "$summary"
  xz -T0 -6 -c "$work/$name.json" > "$final/$name-export.json.xz"
}

models() {
  local db=$work/models.db model
  step ceilings-quick 60 "$TIMEROOF" ceilings --quick --db "$db" || return 1
  for model in bert_base_512 lstm_paper; do
    step "model-$model" 90 "$TIMEROOF" run --model "$model" --db "$db" --out "$work/report-$model"
    grep -v "^$" "$logs/model-$model.log" | tee -a "$summary"
  done
  timeout 30 "$TIMEROOF" export --db "$db" --out "$work/models.json" &&
    xz -T0 -6 -c "$work/models.json" > "$final/models-export.json.xz"
}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version())'
  "$TIMEROOF" info 2>&1 | grep -iE "gpu|cudnn|cublas" | head -8
} 2>&1 | tee -a "$summary"

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(gemm attention models norms memory)
for part in "${parts[@]}"; do
  case "$part" in
    gemm) compare gemm gemm_torch_compare.py "$here/torch_compare_gemm.toml" ;;
    attention) compare attention attention_torch_compare.py attention ;;
    models) models ;;
    norms) compare norms norm_torch_compare.py layernorm batchnorm ;;
    memory) compare memory memory_bound_torch_compare.py pointwise softmax pool ;;
    *) say "unknown part '$part'; allowed: gemm attention models norms memory" ;;
  esac
  tar czf "$final/logs.tgz" -C "$logs" .
done
say "== done in $SECONDS s"
