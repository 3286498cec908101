#!/bin/bash
# Runs dp.c's sweep at three working-set sizes in rounds for SECONDS (default 420), each run with
# about 0.3 s of measured sweeps, and appends "unix-time ms-1600 ms-6400 ms-25600" per round to OUT
# (default sizes.txt): 1,600 rows are 6.4 MB, 6,400 rows 25.6 MB (rna's large rank at 8,000 rows),
# 25,600 rows 102 MB. Run from the repository root on a machine with nothing else running. See
# study/noise.md.
set -euo pipefail
seconds=${1:-420}
out=${2:-sizes.txt}
work=$(mktemp -d)
gcc -O2 -o "$work/dp" study/noise/dp.c
end=$(( $(date +%s) + seconds ))
while [ "$(date +%s)" -lt "$end" ]; do
    a=$("$work/dp" 1600 133)
    b=$("$work/dp" 6400 28)
    c=$("$work/dp" 25600 6)
    echo "$(date +%s) $a $b $c" >> "$out"
done
