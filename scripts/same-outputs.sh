#!/bin/bash
# Checks that two `pep` binaries write the same outputs: run before and after
# a change to the simulator's hot path (outputs must stay byte-identical).
#
#   scripts/same-outputs.sh OLD_PEP NEW_PEP [WORKDIR]
#
# Runs with each binary: every scenario under scenarios/ (2000 s runs cut to
# 20 s, 300 s runs to 60 s), ftp50-pep for 200 s, ftp500 for 60 s, and the
# short `pep reproduce` runs of baseline, shekhar, osada2005, johnson,
# shikama and gschwandtner (one worker each). Then compares every file;
# run.json and sweep.json with their wall-clock fields masked, logs with
# the output directory masked; in every JSON file the build's identity
# (`pep_build`) and the run keys derived from it (`key`: a hash of the
# executable, so two binaries always differ there) are masked too. Exits
# non-zero on any difference. About two
# minutes per binary on a quiet 2-core machine. A scenario either binary
# cannot run is named and fails the comparison (it is not skipped). With
# COMPARE_ONLY=1, only compares what an earlier call left in WORKDIR.
set -u
[ $# -ge 2 ] || { sed -n 2,19p "$0"; exit 2; }
OLD=$(realpath "$1") NEW=$(realpath "$2")
WORK=$(realpath -m "${3:-$(mktemp -d /tmp/same-outputs.XXXXXX)}")
FAILED=""
SC=$(cd "$(dirname "$0")/../scenarios" && pwd)
. "$(dirname "$0")/short-scenarios.sh"

run_all() { # BIN OUT
    local b=$1 o=$2 p
    rm -rf "$o"
    run_short_scenarios "$b" "$SC" "$o"
    local failed=$SHORT_FAILED
    sed 's/"2000s"/"200s"/' "$SC/gschwandtner/ftp50-pep.toml" >"$o/in/ftp50-200.toml"
    "$b" sim run "$o/in/ftp50-200.toml" -o "$o/ftp50-200" -q || failed="$failed ftp50-200"
    sed 's/"2000s"/"60s"/' "$SC/gschwandtner/ftp500.toml" >"$o/in/ftp500-60.toml"
    "$b" sim run "$o/in/ftp500-60.toml" -o "$o/ftp500-60" -q || failed="$failed ftp500-60"
    [ -z "$failed" ] || FAILED="$FAILED
$b could not run:$failed"
    for p in baseline shekhar osada2005 johnson shikama gschwandtner; do
        # A failed claim exits non-zero; the outputs are compared all the same.
        "$b" reproduce "$p" -j 1 -o "$o/rep-$p" --scenarios "$SC" >"$o/rep-$p.log" 2>&1
    done
}

mask() { # FILE: wall-clock fields of run.json / sweep.json; the build's identity
    sed -E -e 's/"(wall_seconds|events_per_second|packets_forwarded_per_second|simulated_seconds_per_wall_second|wall[a-z_]*|elapsed[a-z_]*)": *[0-9.e+-]+/"\1": X/g' \
        -e 's/"(key|pep_build)": *"[^"]*"/"\1": X/g' "$1"
}

# COMPARE_ONLY=1: compare what an earlier call left in WORKDIR.
if [ -z "${COMPARE_ONLY:-}" ]; then
    run_all "$OLD" "$WORK/old"
    run_all "$NEW" "$WORK/new"
fi
A=$WORK/old B=$WORK/new bad=0 n=0
if [ "$(cd "$A" && find . -type f | sort)" != "$(cd "$B" && find . -type f | sort)" ]; then
    echo "the two runs wrote different sets of files"
    bad=1
fi
while read -r f; do
    n=$((n + 1))
    case "$f" in
    *.json | *.md | *.html) cmp -s <(mask "$A/$f") <(mask "$B/$f") ;;
    *.log) cmp -s <(sed "s#$A##g" "$A/$f") <(sed "s#$B##g" "$B/$f") ;;
    *) cmp -s "$A/$f" "$B/$f" ;;
    esac || { echo "differs: $f"; bad=1; }
done < <(cd "$A" && find . -type f)
if [ -n "$FAILED" ]; then
    echo "runs that failed (their outputs are missing, not compared):$FAILED"
    bad=1
fi
echo "$n files compared in $WORK: $([ $bad = 0 ] && echo identical || echo DIFFERENT)"
exit $bad
