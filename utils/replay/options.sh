# Sourced by utils/replay/run.sh and the hold-out scripts: the replay
# options every repository is scored with, so that tuning and hold-out
# figures come from the same protocol. Needs ROOT and FASTCI_OPT set.
#
# 30 commits, evidence refreshed every 10, a full-run check of the
# incremental truth every 10, 3 mutants per commit on lines whose covering
# tests take at most 20 s; REPLAY_ARGS adds options (e.g. "--trace-pr-runs
# --nights 100"). `truth NAME` prints --truth=$TRUTH/NAME when TRUTH names
# an earlier state to re-score FastCI on.
export PYTHONPATH="$ROOT/python:$ROOT/utils/replay${PYTHONPATH:+:$PYTHONPATH}"
COMMON=(--commits 30 --refresh-every 10 --validate-every 10 --mutants 3 --mutant-budget 20
        --fastci-opt "$FASTCI_OPT")
read -r -a EXTRA <<<"${REPLAY_ARGS:-}"
COMMON+=("${EXTRA[@]}")
truth() { [ -n "${TRUTH:-}" ] && echo "--truth=$TRUTH/$1"; }
