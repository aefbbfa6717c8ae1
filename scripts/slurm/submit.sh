#!/usr/bin/env bash
# Submits a timeroof sweep as a Slurm job array of N shards (one GPU each), then
# the merge of their stores once every shard has succeeded.
#
#   scripts/slurm/submit.sh 8 conv2d --batch 1..1024:x2
#   TIMEROOF_OUT=runs/h100 scripts/slurm/submit.sh 4 lstm
#
# Extra sbatch options for both jobs (partition, account): SBATCH_OPTS="-p gpu -A proj".
set -euo pipefail

if [ "$#" -lt 2 ] || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 SHARDS conv2d|lstm|FILE.toml [sweep flags]" >&2
  exit 1
fi
shards=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
export TIMEROOF=${TIMEROOF:-$(cd "$here/../.." && pwd)/build/timeroof}
export TIMEROOF_OUT=${TIMEROOF_OUT:-timeroof-shards}
# shellcheck disable=SC2086  # SBATCH_OPTS is a list of options
array=$(sbatch --parsable ${SBATCH_OPTS:-} --export=ALL --array="0-$((shards - 1))" \
  "$here/sweep-array.sbatch" "$@")
array=${array%%;*}  # "jobid;cluster" on federated clusters
# shellcheck disable=SC2086
merge=$(sbatch --parsable ${SBATCH_OPTS:-} --export=ALL --dependency="afterok:$array" \
  "$here/merge.sbatch")
echo "sweep array: job $array ($shards shards into $TIMEROOF_OUT/shard-<i>.db)"
echo "merge:       job ${merge%%;*} (after every shard succeeds: ${TIMEROOF_MERGED:-timeroof-merged.db})"
