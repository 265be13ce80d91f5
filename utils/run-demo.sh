#!/usr/bin/env bash
# The README's main job: installs what is missing and builds (utils/setup.sh),
# then runs FastCI end to end on the bundled demo workload
# (test/workloads/minitron): parse the repository into IR, and print the
# resulting module summary.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$FASTCI_ROOT/utils/setup.sh"
exec "$FASTCI_PYTHON" "$FASTCI_ROOT/utils/demo.py" --build-dir "$BUILD_DIR" "$@"
