#!/usr/bin/env bash
# What a user crate pays to depend on mheta (issue 20): a hello-world crate with
# `#[mheta::solver]` on a threads-backend solver, built cold in release with a fresh target
# directory. Prints the number of distinct crates in its dependency closure (`cargo tree`,
# normal edges, the crate itself excluded) and the wall time of the build.
#
#   tests/build-size/measure.sh [MHETA_DIR] [RUNS]
#
# MHETA_DIR is the mheta checkout to depend on (default: this one), so that two checkouts can be
# compared in the same session. Each run is a separate cold build; run it on a quiet machine.
set -euo pipefail
# A shared target directory would make the builds below warm.
unset CARGO_TARGET_DIR
mheta_dir=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
runs=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/hello/src"
cat > "$work/hello/Cargo.toml" <<TOML
[package]
name = "hello"
version = "0.1.0"
edition = "2021"

[dependencies]
mheta = { path = "$mheta_dir" }

[workspace]
TOML
cat > "$work/hello/src/main.rs" <<'RUST'
use mheta::{CommError, CommExt, Context, ReduceOp};

#[mheta::solver]
fn solve(ctx: &Context) -> Result<f64, CommError> {
    let comm = ctx.comm();
    let mut x = vec![1.0f64; ctx.local_rows(ctx.rows() as usize)];
    let mut sum = [0.0];
    for _ in 0..ctx.iterations() {
        for v in x.iter_mut() {
            *v *= 0.5;
        }
        comm.all_reduce(&[x.iter().sum::<f64>()], &mut sum, ReduceOp::Sum)?;
    }
    Ok(sum[0])
}

fn main() {
    let _ = solve;
}
RUST
cp "$mheta_dir/Cargo.lock" "$work/hello/" 2>/dev/null || true
cd "$work/hello"
crates=$(cargo tree -e normal --prefix none 2>/dev/null | sed 's/ (\*)//' | awk '{print $1}' | sort -u | grep -vx hello | wc -l)
echo "mheta at $mheta_dir: $crates crates in the closure"
for i in $(seq "$runs"); do
    rm -rf target
    start=$(date +%s.%N)
    cargo build --release --quiet
    end=$(date +%s.%N)
    echo "cold release build $i: $(awk "BEGIN { printf \"%.1f\", $end - $start }") s"
done
