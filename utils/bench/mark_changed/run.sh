#!/bin/sh
# Times mark-changed on a generated diff touching N files (default 10000):
# a mix of Python, docs, configs and native sources, three hunks each.
# Usage: run.sh <build-dir> [N]
set -eu
build=$1
n=${2:-10000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$n" "$work/mr.diff" <<'PY'
import sys
n, out = int(sys.argv[1]), sys.argv[2]
exts = [".py", ".py", ".py", ".md", ".yaml", ".cu"]
with open(out, "w") as f:
    for i in range(n):
        path = f"pkg/d{i % 100}/f{i}{exts[i % len(exts)]}"
        f.write(f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n")
        for h in range(3):
            start = 1 + h * 20
            f.write(f"@@ -{start},3 +{start},3 @@\n a\n-b\n+c\n d\n")
PY
echo "// empty" > "$work/empty.fir"
start=$(date +%s.%N)
"$build/bin/fastci-opt" "$work/empty.fir" -o /dev/null \
  --pass-pipeline="mark-changed{diff=$work/mr.diff}" 2>/dev/null
end=$(date +%s.%N)
echo "files=$n diff_bytes=$(wc -c < "$work/mr.diff") seconds=$(echo "$end - $start" | bc)"
