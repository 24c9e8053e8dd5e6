#!/usr/bin/env bash
# CI runs every test it can (root, ns-2 and tcpdump installed, with
# `-- --include-ignored`): the saved output of that `cargo test` must
# show test results and no ignored test in any of them. A test that skips
# a check at run time fails instead under PEP_REQUIRE_ALL=1, which .ci/run
# sets. Usage: scripts/no-ignored-check.sh <cargo test output>
set -euo pipefail
log=${1:?usage: scripts/no-ignored-check.sh <cargo test output>}

results=$(grep -E '^test result: ' "$log" || true)
if [ -z "$results" ]; then
  echo "no-ignored-check: no 'test result:' line in $log" >&2
  exit 1
fi
# Sums over the binaries: "test result: ok. 12 passed; 0 failed; 3 ignored; ..."
sum() { printf '%s\n' "$results" | awk -v what="$1" '{ for (i = 2; i <= NF; i++) if ($i ~ "^" what) n += $(i - 1) } END { print n + 0 }'; }
runs=$(printf '%s\n' "$results" | wc -l)
ignored=$(sum ignored)
passed=$(sum passed)
if [ "$ignored" -ne 0 ]; then
  echo "no-ignored-check: $ignored test(s) ignored where CI expects every test to run:" >&2
  grep -E '^test .* \.\.\. ignored' "$log" >&2 || true
  exit 1
fi
echo "no-ignored-check: $passed tests passed in $runs test binaries, none ignored"
