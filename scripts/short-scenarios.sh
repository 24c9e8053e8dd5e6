# Sourced by scripts that run every scenario short (same-outputs.sh,
# pgo-build.sh): one definition of "every scenario under scenarios/, cut".
#
#   run_short_scenarios PEP SCENARIOS_DIR OUT_DIR
#
# Runs each file with a [scenario] table, 2000 s runs cut to 20 s and 300 s
# runs to 60 s, from its own directory (scenarios name files beside them),
# into OUT_DIR/<path with / as _>; the cut copies go to OUT_DIR/in/.
# Says "run failed: NAME" for a run that fails and goes on.
run_short_scenarios() {
    local b=$1 sc=$2 o=$3 f n
    mkdir -p "$o/in"
    for f in $(grep -l '^\[scenario\]' $(find "$sc" -name '*.toml') | sort); do
        n=$(echo "${f#"$sc"/}" | tr / _ | sed 's/\.toml$//')
        sed -e 's/^duration = "2000s"/duration = "20s"/' \
            -e 's/^duration = "300s"/duration = "60s"/' "$f" >"$o/in/$n.toml"
        (cd "$(dirname "$f")" && "$b" sim run "$o/in/$n.toml" -o "$o/$n" -q) || echo "run failed: $n"
    done
}
