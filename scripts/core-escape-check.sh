#!/bin/bash
# Shows that pep-core cannot reach the OS (crates/pep-core/src/lib.rs, "The
# core cannot reach the OS"); CI runs it. Four steps, each must hold:
#
#  1. `cargo tree -p pep-core -e normal` names no I/O crate.
#  2. Source guards: lib.rs keeps `no_std` (outside unit tests) and
#     `forbid(unsafe_code)` (no FFI or asm syscalls), and nothing in the
#     crate writes `extern crate std` (which would bring std back).
#  3. A copy of pep-core (in target/core-escape-check) builds as it is;
#     then, for each way out (clocks, threads, files, sockets, environment,
#     processes, OS randomness, RandomState and hashbrown's random hasher,
#     FFI), a probe module making that call is added to the copy and the
#     build must FAIL with the expected error in the probe.
#  4. The copy with rand's `std` features turned on, as a sibling crate can
#     do in a workspace build (cargo unifies features): the randomness
#     probes then compile, and clippy (pep-core's clippy.toml) must refuse
#     each one; so must it hashbrown's default (random, with its default
#     features) hasher named outright.
#
# Any probe that builds, or fails for another reason, fails the script,
# naming the probe. About a minute the first time, seconds after.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CORE=$ROOT/crates/pep-core
WORK=${CORE_ESCAPE_DIR:-$ROOT/target/core-escape-check}
bad=0
fail() { echo "FAIL: $*"; bad=1; }

echo "== 1. pep-core's dependency tree has no I/O crate"
tree=$(cd "$ROOT" && cargo tree -p pep-core -e normal --prefix none) || { echo "cargo tree failed"; exit 1; }
for c in tokio mio socket2 nix libc getrandom; do
    if grep -qE "^$c v" <<<"$tree"; then fail "pep-core depends on $c"; fi
done
echo "$tree" | sort -u | sed 's/^/   /'

# Prints where the source guards are broken in the crate under $1; none: empty.
guards() {
    local src=$1/src
    grep -q '^#!\[cfg_attr(not(test), no_std)\]' "$src/lib.rs" || echo "lib.rs lost #![cfg_attr(not(test), no_std)]"
    grep -q '^#!\[forbid(unsafe_code)\]' "$src/lib.rs" || echo "lib.rs lost #![forbid(unsafe_code)]"
    grep -rn --include='*.rs' -E '^\s*extern\s+crate\s+std\b' "$src" | sed 's/^/extern crate std: /'
}
echo "== 2. source guards"
g=$(guards "$CORE")
[ -z "$g" ] || fail "$g"

# The copy: pep-core alone in a workspace of its own, with the real
# workspace's dependency table and lock file (the same versions).
COPY=$WORK/ws
rm -rf "$COPY/crates"
mkdir -p "$COPY/crates"
cp -r "$CORE" "$COPY/crates/pep-core"
# The members list (one line or several) becomes pep-core alone.
awk '/^members = \[/ { print "members = [\"crates/pep-core\"]"; skip = ($0 !~ /\]/); next }
     skip { skip = ($0 !~ /\]/); next } { print }' "$ROOT/Cargo.toml" >"$COPY/Cargo.toml"
cp "$ROOT/Cargo.lock" "$COPY/Cargo.lock"
echo 'mod escape_probe;' >>"$COPY/crates/pep-core/src/lib.rs"
PROBE=$COPY/crates/pep-core/src/escape_probe.rs
export CARGO_TARGET_DIR=$WORK/target

build() { # TOOL (check|clippy): builds the copy's library, prints rustc's output
    (cd "$COPY" && cargo "$1" -p pep-core --lib --quiet --color never -- ${2:-} 2>&1)
}

echo "== 3. each way out fails to compile inside pep-core"
echo '' >"$PROBE"
out=$(build check) || { echo "$out" | tail -20; echo "FAIL: the unmodified copy of pep-core does not build"; exit 1; }
echo "   ok   unmodified crate builds"

# NAME | expected error (extended regex) | probe code
probes=(
"clock-instant|crate .std.|pub fn f() { let _ = std::time::Instant::now(); }"
"clock-system|crate .std.|pub fn f() { let _ = std::time::SystemTime::now(); }"
"thread|crate .std.|pub fn f() { std::thread::spawn(|| ()); }"
"fs|crate .std.|pub fn f() { let _ = std::fs::read(\"/etc/hostname\"); }"
"net-tcp|crate .std.|pub fn f() { let _ = std::net::TcpStream::connect(\"127.0.0.1:9\"); }"
"net-udp|cannot find .UdpSocket. in .net.|pub fn f() { let _ = core::net::UdpSocket::bind(\"0.0.0.0:0\"); }"
"env|crate .std.|pub fn f() { let _ = std::env::var(\"HOME\"); }"
"process|crate .std.|pub fn f() { let _ = std::process::Command::new(\"true\").status(); }"
"thread-rng|cannot find function .thread_rng. in crate .rand.|pub fn f() -> u64 { use rand::Rng; rand::thread_rng().gen() }"
"rand-random|cannot find function .random. in crate .rand.|pub fn f() -> u64 { rand::random() }"
"from-entropy|no function or associated item named .from_entropy.|pub fn f() { use rand::SeedableRng; let _ = rand_chacha::ChaCha8Rng::from_entropy(); }"
"os-rng|cannot find .*.OsRng.|pub fn f() { let _ = rand::rngs::OsRng; }"
"getrandom|crate .getrandom.|pub fn f() { let mut b = [0u8; 8]; let _ = getrandom::getrandom(&mut b); }"
"hashmap-std|crate .std.|pub fn f() { let _ = std::collections::HashMap::<u32, u32>::new(); }"
"hashmap-hashbrown-default|no function or associated item named .new.|pub fn f() { let mut m = hashbrown::HashMap::<u32, u32>::new(); m.insert(1, 2); }"
"ffi-syscall|usage of an .unsafe. block|extern \"C\" { fn time(t: *mut i64) -> i64; } pub fn f() -> i64 { unsafe { time(core::ptr::null_mut()) } }"
)
for p in "${probes[@]}"; do
    name=${p%%|*} rest=${p#*|}
    want=${rest%%|*} code=${rest#*|}
    echo "$code" >"$PROBE"
    if out=$(build check); then
        fail "probe $name compiled inside pep-core: $code"
    elif ! grep -qE "$want" <<<"$out" || ! grep -q 'escape_probe.rs' <<<"$out"; then
        echo "$out" | head -15
        fail "probe $name failed, but not with /$want/ in the probe"
    else
        echo "   ok   $name: $(grep -m1 -E '^error' <<<"$out")"
    fi
done

# `extern crate std` compiles (it is legal in a no_std crate): the guard of
# step 2 is what refuses it, shown on a probe.
printf 'extern crate std;\npub fn f() { let _ = std::fs::read("/etc/hostname"); }\n' >"$PROBE"
if [ -z "$(guards "$COPY/crates/pep-core")" ]; then
    fail "probe extern-crate-std passed the source guards"
else
    echo "   ok   extern-crate-std: $(guards "$COPY/crates/pep-core" | head -1 | sed "s#$COPY/##")"
fi

echo "== 4. with rand's std features unified in, clippy refuses what becomes reachable"
sed -i -E 's/^rand\.workspace = true$/rand = { workspace = true, features = ["std", "std_rng", "getrandom"] }/' \
    "$COPY/crates/pep-core/Cargo.toml"
grep -q 'std_rng' "$COPY/crates/pep-core/Cargo.toml" || { echo "FAIL: could not turn rand's std on in the copy"; exit 1; }
# NAME | probe code (each must compile, and clippy must name a disallowed method or type)
lints=(
"thread-rng|pub fn f() -> u64 { use rand::Rng; rand::thread_rng().gen() }"
"rand-random|pub fn f() -> u64 { rand::random() }"
"from-entropy|pub fn f() { use rand::SeedableRng; let _ = rand_chacha::ChaCha8Rng::from_entropy(); }"
"os-rng|pub fn f() -> u64 { use rand::RngCore; let mut r: rand::rngs::OsRng = rand::rngs::OsRng; r.next_u64() }"
"hashbrown-default-hasher|pub fn f() -> usize { let m: hashbrown::HashMap<u32, u32, hashbrown::DefaultHashBuilder> = hashbrown::HashMap::with_hasher(Default::default()); m.len() }"
)
for p in "${lints[@]}"; do
    name=${p%%|*} code=${p#*|}
    echo "$code" >"$PROBE"
    if ! out=$(build check); then
        echo "$out" | head -15
        fail "lint probe $name does not compile with rand's std on, so it shows nothing about clippy"
    elif out=$(build clippy "-D clippy::disallowed_methods -D clippy::disallowed_types"); then
        fail "clippy let probe $name through: $code"
    elif ! grep -qE 'use of a disallowed (method|type)' <<<"$out"; then
        echo "$out" | head -15
        fail "clippy refused probe $name, but not as a disallowed method or type"
    else
        echo "   ok   $name: $(grep -m1 -E 'disallowed' <<<"$out")"
    fi
done

if [ $bad = 0 ]; then echo "core-escape-check: every way out refused"; else echo "core-escape-check: FAILED"; fi
exit $bad
