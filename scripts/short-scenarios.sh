# Sourced by scripts that run every scenario short (same-outputs.sh,
# pgo-build.sh): one definition of "every scenario under scenarios/, cut".
#
#   run_short_scenarios PEP SCENARIOS_DIR OUT_DIR
#
# Runs each file with a [scenario] table, 2000 s runs cut to 20 s and 300 s
# runs to 60 s (`--duration`), into OUT_DIR/<path with / as _>. Each runs
# as the file itself, from its own directory: scenarios name files (traces)
# relative to where they are, so a copy elsewhere could not run. Says "run
# failed: NAME" on stderr for a run that fails, goes on, and leaves the
# names of the failed runs in SHORT_FAILED (empty if all ran).
run_short_scenarios() {
    local b=$1 sc=$2 o=$3 f n cut
    SHORT_FAILED=""
    mkdir -p "$o/in"
    for f in $(grep -l '^\[scenario\]' $(find "$sc" -name '*.toml') | sort); do
        n=$(echo "${f#"$sc"/}" | tr / _ | sed 's/\.toml$//')
        cut=()
        if grep -q '^duration = "2000s"' "$f"; then
            cut=(--duration 20s)
        elif grep -q '^duration = "300s"' "$f"; then
            cut=(--duration 60s)
        fi
        (cd "$(dirname "$f")" && "$b" sim run "$f" "${cut[@]}" -o "$o/$n" -q) || {
            echo "run failed: $n" >&2
            SHORT_FAILED="$SHORT_FAILED $n"
        }
    done
}
