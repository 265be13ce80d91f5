#!/bin/bash
# Replays the two real repositories utils/replay/setup.sh prepared and
# prints one table per repository (docs/Evaluation.md, "fastci replay").
#
#   utils/replay/run.sh [DIR] [STATE]      # defaults: build/replay, DIR/state
#   TRUTH=OLDSTATE utils/replay/run.sh [DIR] [STATE]
#
# Both replays run side by side (nice'd; SEQUENTIAL=1: one after the other;
# REPOS=ignite: only that one);
# each is resumable: rerun the same
# command after an interruption. FASTCI_OPT (default build/bin/fastci-opt)
# names the fastci-opt under test. With TRUTH, only FastCI is re-scored
# (collect + plan at the same commits) on the ground truth and baselines of
# the finished replays in OLDSTATE (`fastci replay --truth`): what to run
# after changing FastCI, in a fraction of the time.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(cd "${1:-$ROOT/build/replay}" && pwd)
STATE=${2:-$DIR/state}
FASTCI_OPT=${FASTCI_OPT:-$ROOT/build/bin/fastci-opt}
mkdir -p "$STATE"
# The replay options and invocation (COMMON, truth, replay) shared with the
# hold-out scripts.
source "$ROOT/utils/replay/options.sh"

# accelerate v0.16.0's last 30 merges. Tests needing transformers/datasets/
# deepspeed/sagemaker are left out, as are the TPU config tests (string
# checks that take 1-2 s each); the `accelerate launch` and debug_launcher
# tests start real multi-process runs.
run_accelerate() {
  replay accelerate 36beea9a1be9251a3ad07f7c10fd425c96954f46 -p asyncio_compat \
    -p no:cacheprovider "--rootdir=$DIR/accelerate" tests --ignore tests/test_examples.py --ignore tests/deepspeed \
    --ignore tests/fsdp --ignore tests/test_big_modeling.py --ignore tests/test_sagemaker.py \
    -k "not TpuConfigTester"
}

# ignite v0.4.13's last 30 merges: engine, base, handlers and the launcher
# tests (a subprocess running ignite.distributed), without the tests that
# sleep or train for more than ~5 s, need matplotlib/pandas, or torchrun.
IGNITE_SLOW="not test_gradients_on_resume_cpu and not test_resume_random_dataloader"
IGNITE_SLOW+=" and not spawn_n_procs and not spawn_multinode and not test_time_stored_in_state"
IGNITE_SLOW+=" and not test_terminate_on_time_limit and not tcp and not FILE and not test_write_results"
IGNITE_SLOW+=" and not test_simulate_and_plot_values and not test_distrib_gloo_cpu_or_gpu"
IGNITE_SLOW+=" and not test_run_check_triggered_events_on_iterator and not torch_launch"
run_ignite() {
  replay ignite 50051eab5070b86811b184a5a943cb0fb8cea969 -p xdist_compat \
    -p no:cacheprovider "--rootdir=$DIR/ignite" tests/ignite/engine tests/ignite/base \
    tests/ignite/distributed/test_launcher.py tests/ignite/handlers \
    --ignore tests/ignite/handlers/test_lr_finder.py -k "$IGNITE_SLOW"
}

# REPOS: which replays to run (default both), e.g. REPOS=ignite.
read -r -a repos <<<"${REPOS:-accelerate ignite}"
for repo in "${repos[@]}"; do
  case "$repo" in
    accelerate|ignite) ;;
    *) echo "run.sh: unknown repository '$repo' in REPOS (accelerate, ignite)" >&2; exit 2 ;;
  esac
done
began=$(date +%s)
declare -A pids rcs
for repo in "${repos[@]}"; do
  if [ -n "${SEQUENTIAL:-}" ]; then
    # One after the other (a shared machine): each line says its own time.
    "run_$repo" > "$STATE/$repo.out" 2>&1; rcs[$repo]=$?
    echo "$repo replay: exit ${rcs[$repo]} after $(( $(date +%s) - began ))s"
    began=$(date +%s)
  else
    "run_$repo" > "$STATE/$repo.out" 2>&1 &
    pids[$repo]=$!
  fi
done
if [ -z "${SEQUENTIAL:-}" ]; then
  for repo in "${repos[@]}"; do
    wait "${pids[$repo]}"; rcs[$repo]=$?
    echo "$repo replay: exit ${rcs[$repo]} after $(( $(date +%s) - began ))s"
  done
fi
states=()
for repo in "${repos[@]}"; do
  states+=("$STATE/$repo")
  if [ "${rcs[$repo]}" -ne 0 ]; then
    grep -h "error:" "$STATE/$repo.out" >&2
    exit 1
  fi
done
/usr/bin/python3 -m fastci.cli replay --report "${states[@]}"
