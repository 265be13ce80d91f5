#!/bin/bash
# Hold-out replay of skorch-dev/skorch (docs/Evaluation.md, "Hold-outs for
# the selection rules"): nothing of FastCI has been run on it while
# preparing this script. Set up like utils/replay/setup.sh, replayed like
# run.sh's run_accelerate.
#
#   utils/replay/holdout-skorch.sh DIR             # set up only
#   utils/replay/holdout-skorch.sh DIR run [STATE] # set up (idempotent), then replay
#   TRUTH=OLDSTATE utils/replay/holdout-skorch.sh DIR run [STATE]   # re-score FastCI only
#
# Setup clones skorch from ${SKORCH_SOURCE:-/work/.mirror/skorch-dev+skorch/repo}
# (a clone URL or a local git directory) into DIR/skorch at the pinned head
# and installs it, offline, with `pip install --no-deps -e` into
# DIR/venv-skorch (--system-site-packages over Debian's python3 3.11, torch
# 1.13, numpy 1.24, pytest 7.2). `run` replays it into STATE (default
# DIR/state)/skorch, writes STATE/skorch.out and prints the table; FASTCI_OPT
# (default build/bin/fastci-opt) and REPLAY_ARGS as in run.sh.
#
# Window: skorch v0.15.0's last 30 first-parent commits, 994cca11d5..17c7675eca
# (2023-05-16..2023-09-04, base df8451963c); 18 of the 30 touch .py files.
# v0.15.0's CI runs Python 3.11 with torch 1.13.1; sklearn 1.2 works.
#
# Debian packages (apt-get install --no-install-recommends; PyPI not needed):
#   python3-sklearn python3-scipy python3-tabulate python3-tqdm  (skorch's own)
#   python3-pandas python3-flaky python3-fire python3-numpydoc   (test imports:
#     test_helper/test_dataset, test_net's @flaky, test_cli)
#   python3-matplotlib  (test_doctor's plots; without it 19 tests are skipped)
#
# Excluded tests, and why:
#   skorch/tests/test_hf.py   imports tokenizers/transformers (and needs
#                             accelerate) at module level: no Debian package
#   skorch/tests/llm/         (from 7991e5c on) needs transformers
#   -k SKORCH_K               the 11 tests (e83e6a4 on) that save/load with
#                             use_safetensors=True: safetensors is not packaged
# Skipped by skorch itself: mlflow/neptune/wandb/sacred/tensorboard logger
# tests, gpytorch (test_probabilistic.py), CUDA. The suite is the whole rest:
# 1255 tests at the base, 1274 at the head (1175 passed, 98 skipped,
# 1 xfailed, none failing); ~45-60 s untraced on 2 shared cores. It includes
# TestDistributedHistoryMultiprocessing (child processes, ~35 s). Some tests
# leave history.json, *.pt, *.pkl in the checkout's top (untracked/ignored).
#
# The mirror the search tool's `fetch` leaves lacks one large blob,
# examples/word_language_model/data/penn/train.txt (same blob in the whole
# window), so the clone is sparse without that file; checkouts then print an
# "invalid object" line but succeed, and `git diff` never needs the blob.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -lt 1 ] || { [ $# -ge 2 ] && [ "$2" != run ]; }; then
  echo "usage: $0 DIR [run [STATE]]" >&2
  exit 2
fi
mkdir -p "$1"
DIR=$(cd "$1" && pwd)
HEAD=17c7675ecafedde9b3508101e62fdaf305d26e30   # v0.15.0
SOURCE=${SKORCH_SOURCE:-/work/.mirror/skorch-dev+skorch/repo}
MISSING=examples/word_language_model/data/penn/train.txt

# -- (a) setup ---------------------------------------------------------------
# The Debian packages the suite needs (above), installed when missing.
PACKAGES=(python3-sklearn python3-scipy python3-tabulate python3-tqdm
          python3-pandas python3-flaky python3-fire python3-numpydoc python3-matplotlib)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >&2 || exit 1
fi
if [ ! -d "$DIR/skorch/.git" ]; then
  if ! git clone -q --no-checkout "$SOURCE" "$DIR/skorch"; then
    echo "holdout-skorch: error: cannot clone skorch from '$SOURCE' (set SKORCH_SOURCE)" >&2
    exit 1
  fi
  if ! git -C "$DIR/skorch" sparse-checkout set --no-cone '/*' "!/$MISSING" 2>/dev/null; then
    echo "holdout-skorch: error: cannot make $DIR/skorch a sparse checkout" >&2
    exit 1
  fi
fi
if ! git -C "$DIR/skorch" -c advice.detachedHead=false checkout -q "$HEAD" 2>"$DIR/checkout.err"; then
  cat "$DIR/checkout.err" >&2
  echo "holdout-skorch: error: pinned commit $HEAD is not in '$SOURCE'" >&2
  exit 1
fi
rm -f "$DIR/checkout.err"
if [ ! -x "$DIR/venv-skorch/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$DIR/venv-skorch" || exit 1
fi
"$DIR/venv-skorch/bin/pip" install -q --no-deps --no-build-isolation --no-index -e "$DIR/skorch" || exit 1
echo "holdout-skorch: skorch at $(git -C "$DIR/skorch" rev-parse --short HEAD) in $DIR/skorch"
[ "${2:-}" = run ] || exit 0

# -- (b) replay --------------------------------------------------------------
STATE=${3:-$DIR/state}
FASTCI_OPT=${FASTCI_OPT:-$ROOT/build/bin/fastci-opt}
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
# The same replay options and invocation (COMMON, truth, replay) as run.sh.
source "$ROOT/utils/replay/options.sh"

# use_safetensors=True tests (ids from e83e6a4 on; before it the [True] of
# test_save_and_load_from_checkpoint is explicit_init and stays selected).
SKORCH_K="not safetensors_used and not optimizer_with_safetensors_raises"
SKORCH_K+=" and not initial_state[safetensors] and not custom_scoring[safetensors]"
SKORCH_K+=" and not state_dict_file[True] and not state_dict_str[True]"
SKORCH_K+=" and not from_checkpoint[True- and not from_checkpoint_formatting[True]"
SKORCH_K+=" and not custom_module[True]"
# `-o addopts=`: setup.cfg's addopts want pytest-cov (--cov), which is not
# installed and would fight the line tracer; the test path is given instead.
run_skorch() {
  replay skorch "$HEAD" -p no:cacheprovider -o addopts= "--rootdir=$DIR/skorch" skorch/tests --ignore skorch/tests/test_hf.py \
    --ignore skorch/tests/llm -k "$SKORCH_K"
}

began=$(date +%s)
run_skorch > "$STATE/skorch.out" 2>&1; rc=$?
echo "skorch replay: exit $rc after $(( $(date +%s) - began ))s"
if [ "$rc" -ne 0 ]; then
  grep -h "error:" "$STATE/skorch.out" >&2
  exit 1
fi
/usr/bin/python3 -m fastci.cli replay --report "$STATE/skorch"
