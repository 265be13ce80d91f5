#!/bin/sh
# The IR scale benchmark: generates the target module (100k entities, 10k
# tests, 1M distinct sampled stacks, 10M samples), converts it between forms
# with fastci-opt, and reports load time and peak RSS of each form next to
# the 5 s / 1 GiB target, pinned to 2 cores.
#
# usage: utils/bench/ir_scale/run.sh [build-dir] [work-dir]
# Set FASTCI_BENCH_TEXT=1 to also time the .fir form (about 1.5 GB).
set -eu
build=${1:-build}
work=${2:-$(mktemp -d)}
bin=$build/bin
pin="taskset -c 0,1"
command -v taskset >/dev/null || pin=""

echo "generating into $work ..."
$bin/fastci-ir-scale-gen --emit=bc -o "$work/big.fbc"
ls -l "$work/big.fbc" | awk '{printf "bytecode size: %.1f MiB\n", $5 / 1048576}'

report() {
  form=$1
  file=$2
  $pin /usr/bin/time -f "%e %M" -o "$work/time.txt" \
    $bin/fastci-ir-scale-gen --load "$file" > "$work/load.txt"
  read -r wall rss_kib < "$work/time.txt"
  printf '%-9s %s wall=%ss peak_rss=%.0f MiB   target: < 5 s, < 1024 MiB\n' \
    "$form" "$(cat "$work/load.txt")" "$wall" "$(echo "$rss_kib / 1024" | bc -l)"
}

report bytecode "$work/big.fbc"

# The driver end to end: read, verify, write back.
$pin /usr/bin/time -f "fastci-opt bc->bc (read+verify+write): %es, peak %M KiB" \
  $bin/fastci-opt "$work/big.fbc" --emit=bc -o /dev/null

if [ "${FASTCI_BENCH_TEXT:-0}" = 1 ]; then
  $bin/fastci-opt "$work/big.fbc" -o "$work/big.fir"
  ls -l "$work/big.fir" | awk '{printf "text size: %.1f MiB\n", $5 / 1048576}'
  report text "$work/big.fir"
fi
