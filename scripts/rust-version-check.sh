#!/usr/bin/env bash
# The workspace's `rust-version` must be what Cargo.lock needs: the highest
# `rust-version` among the locked crates (read from their Cargo.toml in
# cargo's registry, fetched first). A lower claim makes cargo refuse at the
# first command on the toolchain it names; a higher one hides what the
# locked dependencies really need. Usage: scripts/rust-version-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

registry="${CARGO_HOME:-$HOME/.cargo}/registry"
cargo fetch --locked --quiet

declared=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' Cargo.toml | head -1)
if [ -z "$declared" ]; then
  echo "rust-version-check: no rust-version in Cargo.toml's [workspace.package]" >&2
  exit 1
fi

# name version pairs of the registry packages in the lock file.
pairs=$(awk '
  /^\[\[package\]\]/ { name = ""; version = "" }
  /^name = /    { gsub(/"/, "", $3); name = $3 }
  /^version = / { gsub(/"/, "", $3); version = $3 }
  /^source = "registry\+/ { print name, version }
' Cargo.lock)

# The locked crate's manifest: unpacked source, or else the downloaded archive.
manifest() {
  local dir f
  for dir in "$registry"/src/*/"$1-$2"; do
    [ -f "$dir/Cargo.toml" ] && { cat "$dir/Cargo.toml"; return; }
  done
  for f in "$registry"/cache/*/"$1-$2.crate"; do
    [ -f "$f" ] && { tar -xzOf "$f" "$1-$2/Cargo.toml"; return; }
  done
  return 1
}

# A version as one number, part by part: 1.88 and 1.88.0 are equal, and
# 1.85 < 1.88 < 1.100.
num() {
  local a b c
  IFS=. read -r a b c <<<"$1"
  echo $((${a:-0} * 1000000 + ${b:-0} * 1000 + ${c:-0}))
}

need="0" by="" missing=0 count=0
while read -r name version; do
  [ -n "$name" ] || continue
  count=$((count + 1))
  if ! m=$(manifest "$name" "$version"); then
    echo "rust-version-check: $name $version not in $registry (after cargo fetch)" >&2
    missing=$((missing + 1))
    continue
  fi
  rv=$(printf '%s\n' "$m" | sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' | head -1)
  [ -n "$rv" ] || continue
  if [ "$(num "$rv")" -gt "$(num "$need")" ]; then
    need=$rv by="$name $version"
  elif [ "$(num "$rv")" -eq "$(num "$need")" ]; then
    by="$by, $name $version"
  fi
done <<<"$pairs"

if [ "$missing" -gt 0 ]; then
  echo "rust-version-check: $missing of $count locked crates could not be read" >&2
  exit 1
fi
if [ "$(num "$declared")" -eq "$(num "$need")" ]; then
  echo "rust-version-check: rust-version $declared is what Cargo.lock needs ($count crates; highest: $by)"
  exit 0
fi
echo "rust-version-check: Cargo.toml says rust-version = \"$declared\", but Cargo.lock needs $need ($by):" >&2
echo "  set rust-version = \"$need\" in Cargo.toml (and the README's toolchain line)" >&2
exit 1
