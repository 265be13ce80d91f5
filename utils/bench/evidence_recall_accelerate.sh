#!/usr/bin/env bash
# Runs utils/bench/evidence_recall.py on a real suite: huggingface/accelerate
# at the pinned tag v0.16.0, its CPU tests that need neither transformers nor
# datasets (Debian 12's python3-torch, -numpy, -yaml, -psutil, -packaging
# suffice), with the package imported from the checkout's src/ (no install).
# The checkout is never committed: it is cloned into a scratch directory.
#
#   utils/bench/evidence_recall_accelerate.sh [GIT-URL-OR-MIRROR] [extra bench args...]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SOURCE=${1:-https://github.com/huggingface/accelerate}
shift || true
TAG=v0.16.0
WORK=${ACCELERATE_WORK:-$(mktemp -d /tmp/accelerate-bench-XXXXXX)}
git clone -q "$SOURCE" "$WORK/checkout"
git -C "$WORK/checkout" checkout -q "$TAG"
PYTHONPATH="$WORK/out/tree/src" /usr/bin/python3 "$ROOT/utils/bench/evidence_recall.py" \
  --tree "$WORK/checkout" --keep "$WORK/out" "$@" --paths \
  tests/test_utils.py tests/test_hooks.py tests/test_data_loader.py \
  tests/test_modeling_utils.py tests/test_scheduler.py tests/test_cpu.py \
  tests/test_kwargs_handlers.py tests/test_offload.py tests/test_memory_utils.py \
  tests/test_optimizer.py tests/test_grad_sync.py tests/test_state_checkpointing.py \
  tests/test_metrics.py
