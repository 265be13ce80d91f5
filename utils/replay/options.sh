# Sourced by utils/replay/run.sh and the hold-out scripts: the replay
# options every repository is scored with, so that tuning and hold-out
# figures come from the same protocol. Needs ROOT and FASTCI_OPT set.
#
# 30 commits, evidence refreshed every 10, a full-run check of the
# incremental truth every 10, 3 mutants per commit on lines whose covering
# tests take at most 20 s; REPLAY_ARGS adds options (e.g. "--trace-pr-runs
# --nights 100"). `truth NAME` prints --truth=$TRUTH/NAME when TRUTH names
# an earlier state to re-score FastCI on. `replay NAME HEAD PYTEST_ARGS...`
# replays DIR/NAME up to HEAD into STATE/NAME with the suite run by
# DIR/venv-NAME's `pytest -q PYTEST_ARGS...` (needs DIR and STATE). The
# command is part of a state (`--truth` re-scores only the same command),
# so the arguments are passed as given.
export PYTHONPATH="$ROOT/python:$ROOT/utils/replay${PYTHONPATH:+:$PYTHONPATH}"
COMMON=(--commits 30 --refresh-every 10 --validate-every 10 --mutants 3 --mutant-budget 20
        --fastci-opt "$FASTCI_OPT")
read -r -a EXTRA <<<"${REPLAY_ARGS:-}"
COMMON+=("${EXTRA[@]}")
truth() { [ -n "${TRUTH:-}" ] && echo "--truth=$TRUTH/$1"; }
replay() {
  local name=$1 head=$2
  shift 2
  PATH="$DIR/venv-$name/bin:$PATH" nice -n 10 /usr/bin/python3 -m fastci.cli replay \
    --repo "$DIR/$name" --head "$head" \
    --state "$STATE/$name" "${COMMON[@]}" $(truth "$name") -- \
    "$DIR/venv-$name/bin/python" -m pytest -q "$@"
}
