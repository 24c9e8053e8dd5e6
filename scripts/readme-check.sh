#!/usr/bin/env bash
# The README's commands, taken from the README itself and run as written:
# the Quick start block, then the "Using it" block, in order, in a copy of
# the checkout (they write out/, results/, my-scenario.toml, ...). `pep` is
# what the Quick start installs (into a scratch CARGO_INSTALL_ROOT, so no
# ~/.cargo/bin is touched). A command that exits non-zero fails the check.
# Skipped by name, each with its reason, are those below: they need root or
# take minutes, and other CI steps or the docs' measurements cover them.
# Each command gets 30 minutes (the first builds pep), a bound for hangs.
# Usage: scripts/readme-check.sh [README.md]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
readme=$(realpath "${1:-README.md}")

# pattern (a bash glob on the command line) | why it is not run here
skips=(
  'cargo test --workspace*|the test suite: .ci/run runs it (as root, ignored tests included)'
  'scripts/pgo-build.sh*|a PGO build: about 15 minutes'
  'scripts/speed-check.sh*|the speed target, timed: minutes, and only meaningful on an idle machine'
  'sudo *|needs root: the lab and daemon root tests cover it in .ci/run'
  'pep reproduce all*|every paper: about an hour, and exits 1 while a claim is not reproduced (README Status)'
  'pep sim run scenarios/gschwandtner/ftp50-pep.toml*|minutes on one thread; the cut tests cover the split run'
)

# The commands of the first ```sh block after the heading $1.
block() {
  awk -v h="$1" '
    $0 == h { inside = 1; next }
    inside && /^## / { exit }
    inside && /^```sh$/ { code = 1; next }
    code && /^```$/ { exit }
    code && !/^[[:space:]]*(#|$)/ { print }
  ' "$readme"
}
commands=$(block '## Quick start (fresh machine)'; block '## Using it')
if [ -z "$commands" ]; then
  echo "readme-check: no commands found in $readme" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$repo" ls-files -z | (cd "$repo" && xargs -0 cp --parents -t "$work")
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
export CARGO_INSTALL_ROOT="$work/.cargo-install"
export PATH="$CARGO_INSTALL_ROOT/bin:$PATH"
cd "$work"

failed=0 ran=0 skipped=0
while IFS= read -r cmd; do
  why=""
  for s in "${skips[@]}"; do
    # shellcheck disable=SC2053 # the pattern is a glob on purpose
    if [[ $cmd == ${s%%|*} ]]; then why=${s#*|}; fi
  done
  if [ -n "$why" ]; then
    echo "skip: $cmd"
    echo "      ($why)"
    skipped=$((skipped + 1))
    continue
  fi
  echo "run:  $cmd"
  # A line whose comment says it exits 1 (a claim not reproduced) must
  # exit 1, not 0 and not anything else.
  want=0
  [[ $cmd == *"# "*"exits 1"* ]] && want=1
  start=$SECONDS
  rc=0
  timeout 1800 bash -o pipefail -c "$cmd" </dev/null >"$work/.out" 2>&1 || rc=$?
  if [ "$rc" -eq "$want" ]; then
    echo "      ok (exit $rc), $((SECONDS - start)) s"
  else
    echo "      FAILED (exit $rc, $want expected) after $((SECONDS - start)) s; its last output:"
    tail -20 "$work/.out" | sed 's/^/      | /'
    failed=$((failed + 1))
  fi
  ran=$((ran + 1))
done <<<"$commands"

echo "readme-check: $ran commands run, $failed failed, $skipped skipped by name"
[ "$failed" -eq 0 ]
