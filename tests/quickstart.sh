#!/usr/bin/env bash
# Runs README.md's quick start (the shell block between the `quickstart` markers) in
# fixtures/rsmpi-heat, as its user would run it in their own crate: keeps the quick start true.
# Needs Open MPI; `mheta` and `cargo-mheta` are installed into a temporary root.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
block=$(awk '/^<!-- quickstart/{on=1; next} /^<!-- \/quickstart -->/{on=0} on' "$repo/README.md" \
    | sed '/^```/d')
[ -n "$block" ] || { echo "README.md has no quickstart block"; exit 1; }
work=$(mktemp -d)
crate="$repo/fixtures/rsmpi-heat"
cleanup() {
    rm -rf "$work" "$crate/tune-report" "$crate/measurements.json"
    [ -L "$crate/target" ] && rm "$crate/target"
    return 0
}
trap cleanup EXIT
export MHETA="$repo"
export CARGO_INSTALL_ROOT="$work/install" PATH="$work/install/bin:$PATH"
# The fixture is a workspace member, so cargo builds it into the workspace's target directory;
# a user's own crate has `target/` beside it, which this link stands in for.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
[ -e "$crate/target" ] || ln -s "$CARGO_TARGET_DIR" "$crate/target"
cd "$crate"
echo "$block" > "$work/quickstart.sh"
bash -euo pipefail "$work/quickstart.sh"
[ -s measurements.json ] || { echo "quick start: no measurements.json"; exit 1; }
[ -s tune-report/index.html ] || { echo "quick start: no tune-report/index.html"; exit 1; }
echo "quick start: ran as README.md writes it"
