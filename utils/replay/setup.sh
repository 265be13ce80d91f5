#!/bin/bash
# Sets up the real repositories `utils/replay/run.sh` replays: clones each at
# a pinned commit into DIR (default build/replay) and installs it, offline,
# with `pip install --no-deps -e` into its own venv made with
# --system-site-packages over Debian's python3 (torch, numpy, pytest, ...).
# Their code is never part of this repository.
#
#   utils/replay/setup.sh [DIR]
#
# Sources (a clone URL or a local git directory), by default the mirrors the
# search tool's `fetch` leaves under /work/.mirror:
#   ACCELERATE_SOURCE  huggingface/accelerate
#   IGNITE_SOURCE      pytorch/ignite
set -euo pipefail

DIR=${1:-build/replay}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

# name  source  pinned commit (the replay window's last commit)
REPOS=(
  "accelerate ${ACCELERATE_SOURCE:-/work/.mirror/huggingface+accelerate/repo} 36beea9a1be9251a3ad07f7c10fd425c96954f46"
  "ignite ${IGNITE_SOURCE:-/work/.mirror/pytorch+ignite/repo} 50051eab5070b86811b184a5a943cb0fb8cea969"
)

for entry in "${REPOS[@]}"; do
  read -r name source pin <<<"$entry"
  if [ ! -d "$DIR/$name/.git" ]; then
    if ! git clone -q "$source" "$DIR/$name"; then
      echo "setup: error: cannot clone $name from '$source' (set ${name^^}_SOURCE)" >&2
      exit 1
    fi
  fi
  if ! git -C "$DIR/$name" -c advice.detachedHead=false checkout -q "$pin"; then
    echo "setup: error: $name: pinned commit $pin is not in '$source'" >&2
    exit 1
  fi
  if [ ! -x "$DIR/venv-$name/bin/python" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$DIR/venv-$name"
  fi
  "$DIR/venv-$name/bin/pip" install -q --no-deps --no-build-isolation --no-index -e "$DIR/$name"
  echo "setup: $name at $(git -C "$DIR/$name" rev-parse --short HEAD) in $DIR/$name"
done
