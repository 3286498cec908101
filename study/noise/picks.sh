#!/bin/bash
# Runs, for ROUNDS rounds (default 15), the four wall-2 cases whose pick the study of 2026-11-28 03:27 UTC
# counted as more than 3 % slower than the fastest median: per case the distribution tune chose and the
# fastest one of that study, one after the other, the order alternating by round. Appends
# "unix-time case round chosen-s other-s" per pair to OUT (default picks.txt), each the run's own
# steady seconds per iteration (--timings), with the iterations tune gave that distribution.
# Run from the repository root after `cargo build --release -p rna -p jacobi -p jacobi-prefetch`, on a
# machine with nothing else running. See study/noise.md.
set -euo pipefail
rounds=${1:-15}
out=${2:-picks.txt}
work=$(mktemp -d)
one() { # fixture cluster rows distribution iterations
    target/release/"$1" --cluster "fixtures/clusters/$2.toml" --rows "$3" --distribution "$4" \
        --iterations "$5" --timings "$work/t.json" > /dev/null
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['iteration_s'])" "$work/t.json"
}
cases=(
    "rna net-2 8000 5540,2460 16 5333,2667 14"
    "rna dc-2 8000 1493,6507 10 1600,6400 12"
    "jacobi dc-2 2000 415,1585 22 400,1600 22"
    "jacobi-prefetch dc-2 2000 358,1642 30 400,1600 28"
)
for r in $(seq 1 "$rounds"); do
    for c in "${cases[@]}"; do
        set -- $c
        if (( r % 2 )); then
            a=$(one "$1" "$2" "$3" "$4" "$5"); b=$(one "$1" "$2" "$3" "$6" "$7")
        else
            b=$(one "$1" "$2" "$3" "$6" "$7"); a=$(one "$1" "$2" "$3" "$4" "$5")
        fi
        echo "$(date +%s) $1-$2 $r $a $b" >> "$out"
    done
done
