#!/bin/bash
# The crate graph's rules (ARCHITECTURE.md), checked with `cargo tree`;
# CI runs it. Fails naming each broken rule:
#
#  * pep-core (normal deps): no I/O crate (tokio, mio, socket2, nix, libc,
#    getrandom); scripts/core-escape-check.sh shows the rest of the rule.
#  * pep-daemon (normal and build deps): no pep-lab, no pep-sim: a product
#    crate on neither the test bench nor the simulator.
#  * pep-sim: no pep-lab, pep-io, pep-daemon, tokio.
#  * pep-cli without default features (no `daemon`): no pep-daemon, tokio,
#    quinn, rustls, ring; with them (the default `pep`): pep-daemon is in.
#  * Unless DEPS_CHECK_NO_BUILD=1: the no-daemon `pep` builds and links,
#    and its `pep proxy` says it was built without the daemon (a test of
#    tests/cli.rs that only such a build compiles).
set -u
cd "$(dirname "$0")/.."
bad=0

# deps PACKAGE EDGES [CARGO FLAGS..]: the crate names in its tree, one a line.
deps() {
    local p=$1 e=$2
    shift 2
    cargo tree -q -p "$p" -e "$e" --prefix none "$@" | sed -E 's/ .*//' | sort -u
}
# refuse PACKAGE EDGES "CRATES" [FLAGS..]: none of CRATES in the tree.
refuse() {
    local p=$1 e=$2 crates=$3 t c ok=1
    shift 3
    t=$(deps "$p" "$e" "$@") || { echo "FAIL: cargo tree -p $p $*"; bad=1; return; }
    for c in $crates; do
        if grep -qx "$c" <<<"$t"; then
            echo "FAIL: $p ($e${*:+, $*}) depends on $c"
            ok=0 bad=1
        fi
    done
    [ $ok = 0 ] || echo "ok   $p ($e${*:+, $*}): none of $crates"
}

refuse pep-core normal "tokio mio socket2 nix libc getrandom"
refuse pep-daemon normal,build "pep-lab pep-sim"
refuse pep-sim normal,build "pep-lab pep-io pep-daemon tokio"
refuse pep-cli normal "pep-daemon tokio quinn quinn-proto rustls ring" --no-default-features
if deps pep-cli normal | grep -qx pep-daemon; then
    echo "ok   pep-cli (normal): the default pep has the daemon"
else
    echo "FAIL: the default pep-cli lost pep-daemon (feature \`daemon\` no longer default?)"
    bad=1
fi

if [ -z "${DEPS_CHECK_NO_BUILD:-}" ]; then
    out=$(cargo test -q -p pep-cli --no-default-features --test cli proxy_without_the_daemon_says_so 2>&1)
    if grep -q "test result: ok. 1 passed" <<<"$out"; then
        echo "ok   pep without the daemon builds, links and refuses \`pep proxy\`"
    else
        echo "$out" | tail -30
        echo "FAIL: pep-cli --no-default-features: build, or its proxy_without_the_daemon_says_so test"
        bad=1
    fi
fi

[ $bad = 0 ] && echo "deps-check: ok" || echo "deps-check: FAILED"
exit $bad
