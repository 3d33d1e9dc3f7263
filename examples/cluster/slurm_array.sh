#!/usr/bin/env bash
# Render a shot list on a SLURM cluster: one array task per shard.
#
#   sbatch --array=0-15 examples/cluster/slurm_array.sh \
#       -default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1 -detpixels 1024
#
# Task k of an array of n tasks runs `nanobragg ... -shard k/n`; the arguments of this script are
# the base flags shared by every shot. The array must be contiguous (--array=A-B, no step or
# list); a task may be resubmitted (e.g. `scontrol requeue`, or the same sbatch again): it skips
# the shots its manifest already lists with intact files. When all tasks are done:
#
#   nanobragg-manifest merge "$OUT_DIR"
#
# Environment (all optional):
#   NANOBRAGG   the nanobragg binary (default: nanobragg on PATH)
#   OUT_DIR     output directory, created if needed (default: shots)
#   SHOTS       a JSON Lines shot list; when empty, N_RANDOM random orientations
#   N_RANDOM    number of random-orientation shots (default: 1000)
#   SEED        base seed of every shot's noise seed and random orientation (default: 1)
#   PREFIX      file name prefix inside OUT_DIR (default: shot_)
#
#SBATCH --job-name=nanobragg-shots
#SBATCH --cpus-per-task=16
#SBATCH --time=04:00:00
#SBATCH --output=nanobragg-shots-%A_%a.log
set -euo pipefail

: "${SLURM_ARRAY_TASK_ID:?not an array task: submit with sbatch --array=0-N (or set SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT by hand)}"
min="${SLURM_ARRAY_TASK_MIN:-0}"
if [ -n "${SLURM_ARRAY_TASK_COUNT:-}" ]; then
    count="$SLURM_ARRAY_TASK_COUNT"
elif [ -n "${SLURM_ARRAY_TASK_MAX:-}" ]; then
    count=$((SLURM_ARRAY_TASK_MAX - min + 1))
else
    echo "slurm_array.sh: SLURM_ARRAY_TASK_COUNT is not set" >&2
    exit 9
fi
shard=$((SLURM_ARRAY_TASK_ID - min))

NANOBRAGG="${NANOBRAGG:-nanobragg}"
OUT_DIR="${OUT_DIR:-shots}"
PREFIX="${PREFIX:-shot_}"
SEED="${SEED:-1}"
mkdir -p "$OUT_DIR"
if [ -n "${SHOTS:-}" ]; then
    source_flags=(-shots "$SHOTS")
else
    source_flags=(-shots_random "${N_RANDOM:-1000}")
fi
# one process per task; it uses all the cores SLURM gave it
exec "$NANOBRAGG" "$@" "${source_flags[@]}" -seed "$SEED" -prefix "$OUT_DIR/$PREFIX" -shard "$shard/$count"
