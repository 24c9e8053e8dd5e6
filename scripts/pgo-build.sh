#!/bin/bash
# Builds a profile-guided (PGO) `pep`: the fastest simulator binary.
#
#   scripts/pgo-build.sh [OUT]        (OUT defaults to target/pgo/pep)
#
# Three steps, about fifteen minutes on a 2-core machine: an instrumented
# build; a training run of every scenario under scenarios/ (long runs cut
# short, plus ftp50-pep for 200 s and ftp500 for 60 s, so the profile
# weighs the engine, TCP, the queues and the agents as steady long runs
# do); a build that uses the merged profile. Both builds use the `fast`
# profile (release with fat LTO and one codegen unit, Cargo.toml).
# Outputs are byte-identical to the plain release build's (optimisation
# only; the simulator has no floating-point reassociation to change).
# Needs `llvm-profdata` of the compiler's own LLVM: `rustup component add
# llvm-tools` (run here when missing). The plain build stays the
# default: `cargo build --release`. PROFILE=release builds without LTO
# (quicker to build, about 3 % slower).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PGO=$TARGET/pgo
OUT=${1:-$PGO/pep}
PROFILE=${PROFILE:-fast}
SC=$ROOT/scenarios
. "$ROOT/scripts/short-scenarios.sh"

sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$sysroot/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$profdata" ]; then
    echo "pgo-build: llvm-profdata not found; installing llvm-tools" >&2
    rustup component add llvm-tools
fi
[ -x "$profdata" ] || { echo "pgo-build: no $profdata (rustup component add llvm-tools)" >&2; exit 1; }

rm -rf "$PGO/raw" "$PGO/train" && mkdir -p "$PGO/raw" "$PGO/train/in"

echo "pgo-build: 1/3 instrumented build" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$PGO/raw" \
    cargo build --profile "$PROFILE" -q -p pep-cli --target-dir "$PGO/gen"

echo "pgo-build: 2/3 training runs" >&2
gen=$PGO/gen/$PROFILE/pep
run_short_scenarios "$gen" "$SC" "$PGO/train"
# The first minute of these runs is slow start and its losses; 200 s of
# ftp50-pep is mostly the steady state the full runs spend their time in.
for run in ftp50-pep:200 ftp500:60; do
    s=${run%:*} secs=${run#*:}
    sed "s/\"2000s\"/\"${secs}s\"/" "$SC/gschwandtner/$s.toml" >"$PGO/train/in/$s-$secs.toml"
    "$gen" sim run "$PGO/train/in/$s-$secs.toml" -o "$PGO/train/$s-$secs" -q
done
"$profdata" merge -o "$PGO/pep.profdata" "$PGO/raw"

echo "pgo-build: 3/3 optimised build" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$PGO/pep.profdata" \
    cargo build --profile "$PROFILE" -q -p pep-cli --target-dir "$PGO/use"
mkdir -p "$(dirname "$OUT")"
cp "$PGO/use/$PROFILE/pep" "$OUT"
echo "pgo-build: $OUT" >&2
