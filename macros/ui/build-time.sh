#!/usr/bin/env bash
# Release build time of the five fixture crates with and without `#[mheta::solver]`.
#
# Usage: macros/ui/build-time.sh [RUNS]   (RUNS defaults to 3; SCRATCH overrides /tmp/mheta-build-time)
#
# Copies the workspace (no target directories, no .git) twice into SCRATCH: `with` as it is,
# `without` with every `#[mheta::solver]` line removed from the fixtures' sources. Both copies
# share one CARGO_TARGET_DIR, and every dependency is built first, so each timed command rebuilds
# only the fixture crate: `touch src/main.rs; cargo build --release -p <fixture>`. The two
# variants are timed alternately, RUNS times each; the report is the median per fixture and
# variant, and their ratio.
set -euo pipefail

runs=${1:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=${SCRATCH:-/tmp/mheta-build-time}
fixtures=(jacobi jacobi-prefetch cg lanczos rna)

rm -rf "$scratch"
mkdir -p "$scratch/with" "$scratch/without"
for variant in with without; do
    tar -C "$root" --exclude=target --exclude=.git -cf - . | tar -C "$scratch/$variant" -xf -
done
for f in "${fixtures[@]}"; do
    if ! grep -q '#\[mheta::solver\]' "$scratch/without/fixtures/$f/src/main.rs"; then
        echo "fixtures/$f/src/main.rs has no #[mheta::solver] line" >&2
        exit 1
    fi
    sed -i '/^[[:space:]]*#\[mheta::solver\][[:space:]]*$/d' "$scratch/without/fixtures/$f/src/main.rs"
done

export CARGO_TARGET_DIR="$scratch/target"
packages=()
for f in "${fixtures[@]}"; do packages+=(-p "$f"); done
for variant in with without; do
    (cd "$scratch/$variant" && cargo build --release --quiet "${packages[@]}")
done

# Seconds taken by one rebuild of fixture $2 in variant $1.
time_one() {
    local dir="$scratch/$1" start end
    touch "$dir/fixtures/$2/src/main.rs"
    start=$(date +%s.%N)
    (cd "$dir" && cargo build --release --quiet -p "$2")
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-16s %10s %10s %7s   (median of %d release rebuilds, seconds)\n' fixture with without ratio "$runs"
for f in "${fixtures[@]}"; do
    with=() without=()
    for _ in $(seq "$runs"); do
        with+=("$(time_one with "$f")")
        without+=("$(time_one without "$f")")
    done
    w=$(printf '%s\n' "${with[@]}" | median)
    wo=$(printf '%s\n' "${without[@]}" | median)
    printf '%-16s %10.2f %10.2f %7.2f   with: %s  without: %s\n' "$f" "$w" "$wo" \
        "$(echo "$w / $wo" | bc -l)" "${with[*]}" "${without[*]}"
done
