#!/usr/bin/env bash
# Fetches tree-sitter-python@0.23.6 (language ABI 14, the newest that Debian's
# libtree-sitter 0.20.7 loads) with `npm pack`, verifies its sha256 and unpacks
# it to DEST/tree-sitter-python. Does nothing when it is already there.
set -euo pipefail
DEST=${1:?usage: fetch-grammar.sh DEST_DIR}
VERSION=0.23.6
SHA256=aab5b860d93dbf84b37fed532f7dacc0468ede5387d0c74911d68f964287662a
OUT="$DEST/tree-sitter-python"
[ -f "$OUT/.fastci-verified-$VERSION" ] && exit 0
mkdir -p "$DEST"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "[setup] fetching tree-sitter-python@$VERSION from the npm registry" >&2
(cd "$tmp" && npm pack --silent "tree-sitter-python@$VERSION" >/dev/null)
tarball="$tmp/tree-sitter-python-$VERSION.tgz"
actual=$(sha256sum "$tarball" | cut -d' ' -f1)
if [ "$actual" != "$SHA256" ]; then
  echo "error: tree-sitter-python-$VERSION.tgz has sha256 $actual, expected $SHA256" >&2
  exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT"
tar -xzf "$tarball" -C "$OUT" --strip-components=1
touch "$OUT/.fastci-verified-$VERSION"
