#!/bin/sh
# Times mark-changed on a generated diff touching N files (default 10000):
# a mix of Python, docs, configs and native sources, three hunks each.
# Usage: run.sh <build-dir> [N] [--module]
#
# Without --module the Module is empty, so every Python file is an added
# file and only diff reading and the policy are timed. With --module the
# Python files exist in a generated checkout (three decorated functions
# each, decorators spanning three lines), parse-python builds the Module
# first (not timed), and mark-changed then does the full work: it rebuilds
# each old file from the checkout with the diff reversed, parses it,
# places the decorators from both texts and maps every hunk to its entity.
set -eu
build=$1
n=${2:-10000}
mode=${3:-}
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
/usr/bin/python3 - "$n" "$work" "$mode" <<'PY'
import os, sys
n, work, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
exts = [".py", ".py", ".py", ".md", ".yaml", ".cu"]
with open(os.path.join(work, "mr.diff"), "w") as f:
    for i in range(n):
        path = f"pkg/d{i % 100}/f{i}{exts[i % len(exts)]}"
        f.write(f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n")
        python = mode == "--module" and path.endswith(".py")
        if python:
            # Three 20-line blocks: a decorated function whose second
            # statement the hunk changes.
            lines = []
            for h in range(3):
                lines += ["@decorate(", '    "arg",', ")", f"def f{h}(v):",
                          "    a = v", "    b = a + 2", "    return b"]
                lines += [""] * 13
            full = os.path.join(work, "root", path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as out:
                out.write("\n".join(lines) + "\n")
        for h in range(3):
            start = 1 + h * 20
            if python:
                f.write(f"@@ -{start + 4},3 +{start + 4},3 @@\n"
                        "     a = v\n-    b = a + 1\n+    b = a + 2\n"
                        "     return b\n")
            else:
                f.write(f"@@ -{start},3 +{start},3 @@\n a\n-b\n+c\n d\n")
PY
echo "// empty" > "$work/empty.fir"
input="$work/empty.fir"
options="diff=$work/mr.diff"
if [ "$mode" = "--module" ]; then
  "$build/bin/fastci-opt" "$work/empty.fir" -o "$work/module.fir" \
    --pass-pipeline="parse-python{root=$work/root}"
  input="$work/module.fir"
  options="$options,root=$work/root"
fi
start=$(date +%s.%N)
/usr/bin/time -f "cpu_seconds=%U+%S max_rss_kb=%M" -o "$work/time.txt" \
  "$build/bin/fastci-opt" "$input" -o "$work/out.fir" --timing \
  --pass-pipeline="mark-changed{$options}" 2>"$work/timing.txt"
end=$(date +%s.%N)
# Wall time of the whole process (reading the module included), its CPU
# time, and the pass's own line of the --timing report (wall, CPU).
echo "files=$n diff_bytes=$(wc -c < "$work/mr.diff") seconds=$(echo "$end - $start" | bc)" \
  "$(cat "$work/time.txt")" \
  "changes=$(grep -c '^change ' "$work/out.fir" || true)"
grep "mark-changed" "$work/timing.txt" || true
