#!/usr/bin/env bash
# Runs every FastCI test on a fresh or existing checkout: installs what is
# missing and builds (utils/setup.sh), then runs the lit suites, the
# GoogleTest unit tests (ctest) and the Python tests (pytest), and prints one
# summary line. Exits non-zero if anything failed. This is the README's test
# command and what .ci/run calls.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$FASTCI_ROOT/utils/setup.sh" || { echo "fastci: setup or build failed" >&2; exit 1; }

REPORT_DIR="$BUILD_DIR/test-reports"
rm -rf "$REPORT_DIR"
mkdir -p "$REPORT_DIR"
status=0

echo "== lit"
LIT="/usr/lib/llvm-19/build/utils/lit/lit.py"
"$FASTCI_PYTHON" "$LIT" -sv --xunit-xml-output "$REPORT_DIR/lit.xml" \
  "$BUILD_DIR/test" || status=1

echo "== unit (ctest)"
(cd "$BUILD_DIR" && ctest --output-on-failure --output-junit "$REPORT_DIR/ctest.xml") || status=1

echo "== python (pytest)"
PYTHONPATH="$FASTCI_ROOT/python:$FASTCI_ROOT/utils${PYTHONPATH:+:$PYTHONPATH}" \
FASTCI_BUILD_DIR="$BUILD_DIR" \
  "$FASTCI_PYTHON" -m pytest -q -p no:cacheprovider --junitxml "$REPORT_DIR/pytest.xml" \
  "$FASTCI_ROOT/test/python"
rc=$?
# pytest exits 5 when it collected nothing: that is a broken suite, not a pass.
[ $rc -ne 0 ] && status=1

# A suite that wrote no report did not run: never count it as passed.
for suite in lit ctest pytest; do
  [ -s "$REPORT_DIR/$suite.xml" ] ||
    { echo "fastci: no $suite report in $REPORT_DIR" >&2; status=1; }
done
"$FASTCI_PYTHON" "$FASTCI_ROOT/utils/summarize-junit.py" "$REPORT_DIR"/*.xml || status=1
exit $status
