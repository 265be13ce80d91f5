#!/usr/bin/env bash
# Bootstraps a FastCI build on Debian 12: installs the Debian packages that are
# missing (and only those), fetches the tree-sitter-python grammar from the npm
# registry when absent, then configures and incrementally builds with Ninja.
# Run by utils/run-tests.sh and utils/run-demo.sh; safe to re-run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

REQUIRED_PACKAGES=(
  build-essential cmake ninja-build git ca-certificates
  llvm-19-dev llvm-19-tools libzstd-dev libtree-sitter-dev libtbb-dev
  libgtest-dev libpugixml-dev
  python3 python3-dev python3-pytest python3-numpy python3-torch python3-yaml
)

log() { printf '[setup] %s\n' "$*" >&2; }

install_missing_packages() {
  local missing=()
  for pkg in "${REQUIRED_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$pkg")
    fi
  done
  # npm comes with the machine's Node.js (nodesource) or, failing that, Debian's.
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing missing packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

install_missing_packages
"$FASTCI_ROOT/utils/fetch-grammar.sh" "$BUILD_DIR/third_party"

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  log "configuring $BUILD_DIR"
  cmake -S "$FASTCI_ROOT" -B "$BUILD_DIR" -G Ninja \
    -DPython3_EXECUTABLE="$FASTCI_PYTHON" ${FASTCI_CMAKE_ARGS:-} >&2
fi
log "building"
cmake --build "$BUILD_DIR" --target all fastci-unittests >&2
