#!/usr/bin/env bash
# The README's main job: installs what is missing and builds (utils/setup.sh),
# then replays the merge requests of the demo workload (test/workloads/minitron)
# through FastCI and the strategies it competes with, and prints the summary
# table and the report's path (utils/demo.py, docs/Evaluation.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$FASTCI_ROOT/utils/setup.sh"
exec "$FASTCI_PYTHON" "$FASTCI_ROOT/utils/demo.py" --build-dir "$BUILD_DIR" "$@"
