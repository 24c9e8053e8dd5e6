#!/bin/bash
# Builds a profile-guided (PGO) `pep`: the fastest simulator binary.
#
#   scripts/pgo-build.sh [OUT]        (OUT defaults to target/pgo/pep)
#
# Three steps, about ten minutes on a 2-core machine: an instrumented
# release build; a training run of every scenario under scenarios/ (long
# runs cut short, plus ftp50-pep and ftp500 for 60 s each, so the profile
# weighs the engine, TCP, the queues and the agents as real runs do); a
# release build that uses the merged profile. Outputs are byte-identical to
# the plain release build's (optimisation only; the simulator has no
# floating-point reassociation to change). Needs `llvm-profdata` of the
# compiler's own LLVM: `rustup component add llvm-tools` (run here when
# missing). The plain build stays the default: `cargo build --release`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PGO=$TARGET/pgo
OUT=${1:-$PGO/pep}
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
    cargo build --release -q -p pep-cli --target-dir "$PGO/gen"

echo "pgo-build: 2/3 training runs" >&2
gen=$PGO/gen/release/pep
run_short_scenarios "$gen" "$SC" "$PGO/train"
for s in ftp50-pep ftp500; do
    sed 's/"2000s"/"60s"/' "$SC/gschwandtner/$s.toml" >"$PGO/train/in/$s-60.toml"
    "$gen" sim run "$PGO/train/in/$s-60.toml" -o "$PGO/train/$s-60" -q
done
"$profdata" merge -o "$PGO/pep.profdata" "$PGO/raw"

echo "pgo-build: 3/3 optimised build" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$PGO/pep.profdata" \
    cargo build --release -q -p pep-cli --target-dir "$PGO/use"
mkdir -p "$(dirname "$OUT")"
cp "$PGO/use/release/pep" "$OUT"
echo "pgo-build: $OUT" >&2
