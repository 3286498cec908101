#!/bin/bash
# Runs, for ROUNDS rounds (default 15), pairs of distributions of wall-2 cases, one after the other, the
# order alternating by round, and appends "unix-time case round first-s second-s" per pair to OUT (default
# picks.txt), each the run's own steady seconds per iteration (--timings).
#
# A CASE is "FIXTURE CLUSTER ROWS FIRST ITERATIONS SECOND ITERATIONS", each distribution with the
# iterations tune gave it. Without CASEs: the four cases whose pick the study of 2026-11-28 03:27 UTC
# counted as more than 3 % slower than the fastest median, the chosen distribution first.
# Run from the repository root after `cargo build --release` of the fixtures named, on a machine with
# nothing else running. See study/noise.md.
set -euo pipefail
rounds=${1:-15}
out=${2:-picks.txt}
shift $(( $# < 2 ? $# : 2 ))
cases=("$@")
if [ "${#cases[@]}" -eq 0 ]; then
    cases=(
        "rna net-2 8000 5540,2460 16 5333,2667 14"
        "rna dc-2 8000 1493,6507 10 1600,6400 12"
        "jacobi dc-2 2000 415,1585 22 400,1600 22"
        "jacobi-prefetch dc-2 2000 358,1642 30 400,1600 28"
    )
fi
work=$(mktemp -d)
one() { # fixture cluster rows distribution iterations
    target/release/"$1" --cluster "fixtures/clusters/$2.toml" --rows "$3" --distribution "$4" \
        --iterations "$5" --timings "$work/t.json" > /dev/null
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['iteration_s'])" "$work/t.json"
}
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
