#!/usr/bin/env bash
# What an ordinary user's `cargo test` meets, checked as one (CI is root):
#  1. the daemon's unit tests, the loopback tunnel among them, pass without
#     CAP_NET_ADMIN (split-end once set SO_MARK 0, which needs it, and a
#     test then waited forever);
#  2. the daemon's root tests are listed as ignored, each with its reason;
#  3. one of them run anyway (--include-ignored) fails saying it needs root.
# Needs root (it creates the user and runs as it). Builds nothing new
# after .ci/run's `cargo test`. Usage: scripts/unprivileged-check.sh [user]
set -euo pipefail
cd "$(dirname "$0")/.."
user=${1:-pepuser}

if [ "$(id -u)" -ne 0 ]; then
  echo "unprivileged-check: run as root (it runs tests as user $user)" >&2
  exit 1
fi
id "$user" >/dev/null 2>&1 || useradd --create-home "$user"

# The daemon's test binaries as `cargo test --workspace` built them (a
# narrower -p build would unify features differently and rebuild), copied
# where the user can run them (the checkout may sit in a directory it
# cannot enter).
built=$(cargo test --workspace --no-run 2>&1)
bin() { sed -n "s|.*Executable $1 (\(.*/$2-[0-9a-f]*\))$|\1|p" <<<"$built"; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$(bin 'unittests src/lib.rs' pep_daemon)" "$dir/lib"
cp "$(bin 'tests/all.rs' root)" "$dir/root"
chmod -R a+rX "$dir"
lib=$dir/lib
root=$dir/root
as_user() { (cd "$dir" && timeout 300 runuser -u "$user" -- "$@"); }

echo "-- the daemon's unit tests as $user"
as_user "$lib" --quiet

echo "-- the daemon's root tests as $user: ignored, with the reason"
out=$(as_user "$root" 2>&1) || { echo "$out"; exit 1; }
total=$(as_user "$root" --list --include-ignored 2>/dev/null | grep -c ': test$')
ignored=$(grep -c 'ignored, needs root' <<<"$out" || true)
if [ "$ignored" -ne "$total" ] || ! grep -q "0 passed; 0 failed; $total ignored" <<<"$out"; then
  echo "$out"
  echo "unprivileged-check: expected all $total root tests ignored (needs root), saw $ignored" >&2
  exit 1
fi
echo "$total ignored, each 'needs root'"

echo "-- one run anyway as $user: fails saying why"
one=paths::route_initcwnd_sets_the_server_legs_first_window
if out=$(as_user "$root" --include-ignored --exact "$one" 2>&1); then
  echo "$out"
  echo "unprivileged-check: $one passed without root" >&2
  exit 1
fi
if ! grep -q "needs root" <<<"$out"; then
  echo "$out"
  echo "unprivileged-check: $one failed without saying it needs root" >&2
  exit 1
fi
echo "failed as it should: $(grep -m1 'needs root' <<<"$out")"
