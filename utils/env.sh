# Sourced by FastCI's scripts: where things are. Only variable definitions.
FASTCI_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${FASTCI_BUILD_DIR:-$FASTCI_ROOT/build}
# Absolute, because scripts change directory (ctest runs inside it).
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$PWD/$BUILD_DIR ;; esac
# The first python3 on PATH can be an interpreter without Debian's packages
# (torch, numpy, pytest); FastCI's Python side always runs on Debian's.
FASTCI_PYTHON=${FASTCI_PYTHON:-/usr/bin/python3}
export FASTCI_ROOT BUILD_DIR FASTCI_PYTHON
