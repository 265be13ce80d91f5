#!/usr/bin/env bash
# Builds FastCI's libFuzzer targets (utils/fuzz/CMakeLists.txt) with clang,
# ASan and UBSan in their own build directory, seeds each target's corpus
# from the lit inputs, and runs every target for the given number of seconds
# (default 120). Prints one line per target: executions, corpus size and
# whether it found anything; crashing inputs are kept under
# $FUZZ_BUILD_DIR/artifacts/<target>/. Exits 1 if any target found one.
#
#   utils/fuzz/run.sh [seconds-per-target] [target...]
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_JOBS (targets run
# at once, default 1), FUZZ_BUILD_JOBS (ninja -j, default 2).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SECONDS_PER_TARGET=${1:-120}
shift || true
BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
JOBS=${FUZZ_JOBS:-1}
CLANG_VERSION=19
TARGETS=(fir json bytecode pipeline diff evidence evidence-v2 junit results-csv
         results-json manifest schema change-policy)
[ $# -gt 0 ] && TARGETS=("$@")

# Debian 12's clang-14 cannot compile the project (its C++20 library support
# rejects std::vector of an incomplete type, which YAML.h relies on), so the
# fuzzers need clang 19 and its runtime libraries.
if ! command -v clang++-$CLANG_VERSION >/dev/null ||
   ! ls /usr/lib/llvm-$CLANG_VERSION/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a \
     >/dev/null 2>&1; then
  echo "== installing clang-$CLANG_VERSION and libclang-rt-$CLANG_VERSION-dev"
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get install -y --no-install-recommends \
    clang-$CLANG_VERSION libclang-rt-$CLANG_VERSION-dev >/dev/null
fi

echo "== building fuzzers in $BUILD"
# -O1 and line tables only: enough for fast runs and symbolized stacks, and
# cheaper to compile than full debug info under two sanitizers.
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_C_FLAGS="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" \
  -DCMAKE_C_COMPILER=clang-$CLANG_VERSION \
  -DCMAKE_CXX_COMPILER=clang++-$CLANG_VERSION \
  -DPython3_EXECUTABLE=/usr/bin/python3 \
  -DFASTCI_ENABLE_SANITIZERS=ON -DFASTCI_ENABLE_FUZZERS=ON >/dev/null
ninja -C "$BUILD" -j "${FUZZ_BUILD_JOBS:-2}" fastci-opt fastci-fuzzers >/dev/null

# Seeds: every lit input, split-file's sections of every lit test, and the
# .fir inputs rewritten as JSON and bytecode by fastci-opt.
SEEDS="$BUILD/seeds"
rm -rf "$SEEDS"
mkdir -p "$SEEDS/split"
n=0
while IFS= read -r test; do
  n=$((n + 1))
  /usr/lib/llvm-$CLANG_VERSION/bin/split-file "$test" "$SEEDS/split/$n" 2>/dev/null || true
done < <(grep -rl '^#--- ' "$ROOT/test" --include='*.test')

# seed <target> <find predicates...>: copies matching files into its corpus.
seed() {
  local target=$1
  shift
  mkdir -p "$SEEDS/$target"
  find "$ROOT/test" "$SEEDS/split" "$ROOT/passes" -type f "$@" \
    -not -path '*/minitron/history/*' -size -64k \
    -exec sh -c 'cp "$1" "$2/$(echo "$1" | md5sum | cut -c1-16)"' _ {} "$SEEDS/$target" \;
}
seed fir -name '*.fir'
seed diff \( -name '*.diff' -o -name '*.patch' \)
seed evidence \( -name '*.stacks' -o -path '*merge-evidence/Inputs/*' \)
seed evidence-v2 \( -name '*.stacks' -o -path '*merge-evidence/Inputs/*' \)
seed junit -name '*.xml'
seed results-csv -name '*.csv'
seed results-json -path '*history*' -name '*.json'
for target in manifest schema change-policy; do
  seed $target \( -name '*.yaml' -o -name '*.yml' \)
done
mkdir -p "$SEEDS/json" "$SEEDS/bytecode" "$SEEDS/pipeline"
for fir in "$SEEDS"/fir/*; do
  base=$(basename "$fir")
  "$BUILD/bin/fastci-opt" "$fir" --emit=json -o "$SEEDS/json/$base" 2>/dev/null || rm -f "$SEEDS/json/$base"
  "$BUILD/bin/fastci-opt" "$fir" --emit=bc -o "$SEEDS/bytecode/$base" 2>/dev/null || rm -f "$SEEDS/bytecode/$base"
done
grep -rhoE -- "--pass-pipeline='[^']*'" "$ROOT/test" | sed -E "s/^--pass-pipeline='(.*)'$/\1/" |
  while IFS= read -r pipeline; do
    printf '%s' "$pipeline" > "$SEEDS/pipeline/$(printf '%s' "$pipeline" | md5sum | cut -c1-16)"
  done

# run <target>: fuzzes one target; its summary line goes to results/<target>.
run() {
  local target=$1 corpus="$BUILD/corpus/$1" artifacts="$BUILD/artifacts/$1/"
  # Artifacts are this run's findings; fixed ones live on as lit tests.
  rm -rf "$artifacts"
  mkdir -p "$corpus" "$artifacts" "$BUILD/results"
  local log="$BUILD/results/$target.log"
  # -rss_limit_mb and -timeout turn a memory blow-up or a hang into a
  # finding; detect_leaks is on by default under ASan.
  set +e
  "$BUILD/bin/fuzz-$target" "$corpus" "$SEEDS/$target" \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1
  local rc=$?
  set -e
  local runs
  runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
  local found
  found=$(find "$artifacts" -type f | wc -l)
  printf '%-14s %10s execs %6s corpus  %s\n' "$target" "${runs:-?}" \
    "$(find "$corpus" -type f | wc -l)" \
    "$([ $rc -eq 0 ] && [ "$found" -eq 0 ] && echo ok || echo "FOUND $found (rc $rc, see $log)")" \
    > "$BUILD/results/$target"
}

echo "== fuzzing ${#TARGETS[@]} targets for ${SECONDS_PER_TARGET}s each, $JOBS at a time"
for target in "${TARGETS[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  run "$target" &
done
wait
status=0
for target in "${TARGETS[@]}"; do
  cat "$BUILD/results/$target"
  grep -q ' ok$' "$BUILD/results/$target" || status=1
done
exit $status
