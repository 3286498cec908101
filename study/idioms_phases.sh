#!/bin/bash
# Traces every rsmpi idiom program (fixtures/analysis/idioms, instrumented by
# fixtures/rsmpi-idioms/build.rs, attached inside `main`) under `mpirun -np 4`, analyses its
# annotated source, and runs `mheta phases --iterations K --structure` for K = 2 and 3.
# Usage: study/idioms_phases.sh OUT_DIR   (after the two builds below). One line per program and K.
#   cargo build --release -p mheta-cli
#   cargo build --release --features instrumented -p rsmpi-idioms
set -u
out=${1:?usage: study/idioms_phases.sh OUT_DIR}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
target=${CARGO_TARGET_DIR:-target}/release
sources=$(dirname "$(ls -t "$target"/build/rsmpi-idioms-*/out/instrumented.rs | head -1)")
programs=$(grep -o '("[a-z_0-9]*", "[a-z_]*")' fixtures/rsmpi-idioms/build.rs | cut -d'"' -f2)
for p in $programs; do
    MHETA_TRACE="$out/$p.trace.json" timeout 120 mpirun --oversubscribe -np 4 \
        "$target/instrumented" "$p" > "$out/$p.run.txt" 2>&1
    "$target/mheta" analyze "$sources/$p.rs" --out "$out/$p.structure.json" 2>/dev/null
    for k in 2 3; do
        if [ ! -f "$out/$p.trace.json" ]; then echo "$p K=$k no trace"; continue; fi
        start=$(date +%s.%N)
        timeout 120 "$target/mheta" phases "$out/$p.trace.json" --iterations $k \
            --structure "$out/$p.structure.json" > "$out/$p.phases$k.txt" 2>&1
        rc=$?
        printf '%s K=%s rc=%s %.2fs %s\n' "$p" $k $rc "$(echo "$(date +%s.%N) - $start" | bc)" \
            "$(tail -1 "$out/$p.phases$k.txt" | cut -c1-100)"
    done
done
