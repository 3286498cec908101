#!/bin/bash
# Alternates a plain C program doing rna's loop (dp.c) with a one-rank rna run of the same size, for
# SECONDS (default 1200), and appends "unix-time c-ms rna-ms" per pair to OUT (default pairs.txt).
# Run from the repository root after `cargo build --release -p rna`, on a machine with nothing else
# running. See study/noise.md.
set -euo pipefail
seconds=${1:-1200}
out=${2:-pairs.txt}
work=$(mktemp -d)
gcc -O2 -o "$work/dp" study/noise/dp.c
cat > "$work/one.toml" <<'TOML'
[network]
latency = "60us"
bandwidth = "125MB/s"

[[node]]
cpu = 1.0
memory = "256MiB"
disk_read = "200MB/s"
disk_write = "150MB/s"
disk_latency = "1ms"
TOML
end=$(( $(date +%s) + seconds ))
while [ "$(date +%s)" -lt "$end" ]; do
    c=$("$work/dp" 6400 14)
    target/release/rna --cluster "$work/one.toml" --rows 6400 --distribution 6400 --iterations 14 \
        --timings "$work/t.json" > /dev/null
    r=$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['iteration_s'] * 1e3, 3))" "$work/t.json")
    echo "$(date +%s) $c $r" >> "$out"
done
