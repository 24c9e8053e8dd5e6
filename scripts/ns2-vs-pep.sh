#!/bin/bash
# ns-2 against pepkit on the engine benchmark's dumbbell, alternating runs
# (ns-2, pep, ns-2, pep, ...) so that load on a shared machine falls on both:
#
#   scripts/ns2-vs-pep.sh PEP [FLOWS [SECONDS [ROUNDS]]]
#
# Defaults: 2000 flows, 20 s simulated, 2 rounds. ns-2 runs
# scripts/ns2-dumbbell.tcl (the same topology and parameters); pep runs
# `pep sim bench`. Prints one table row per run: set-up (ns-2: building the
# topology and computing routes; pep: loading the scenario and building the
# engine, process start and exit included) and run wall seconds apart, and
# the goodput each reports.
set -eu
[ $# -ge 1 ] || { sed -n 2,12p "$0"; exit 2; }
PEP=$(realpath "$1") FLOWS=${2:-2000} SECONDS_SIM=${3:-20} ROUNDS=${4:-2}
TCL=$(cd "$(dirname "$0")" && pwd)/ns2-dumbbell.tcl
command -v ns >/dev/null || { echo "ns (ns-2) is not installed" >&2; exit 1; }

now() { date +%s.%N; }
echo "dumbbell, $FLOWS NewReno flows, $SECONDS_SIM s simulated; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| run | simulator | set-up s | run s | total s | goodput Mbit/s |\n'
printf '| --- | --- | --- | --- | --- | --- |\n'
for r in $(seq 1 "$ROUNDS"); do
    out=$(ns "$TCL" "$FLOWS" "$SECONDS_SIM")
    setup=$(awk '/^setup_s/ {print $2}' <<<"$out")
    run=$(awk '/^run_s/ {print $2}' <<<"$out")
    gp=$(awk '/^goodput_mbps/ {print $2}' <<<"$out")
    printf '| %d | ns-2 | %.2f | %.2f | %.2f | %s |\n' "$r" "$setup" "$run" \
        "$(echo "$setup + $run" | bc -l)" "$gp"

    t0=$(now)
    out=$("$PEP" sim bench --flows "$FLOWS" --seconds "$SECONDS_SIM")
    t1=$(now)
    # The row: flows, wall s, events, Mevents/s, Mpkts fwd/s, goodput, "Mbit/s", kB/flow.
    row=$(awk -v n="$FLOWS" '$1 == n' <<<"$out")
    run=$(awk '{print $2}' <<<"$row")
    gp=$(awk '{print $6}' <<<"$row")
    total=$(echo "$t1 - $t0" | bc -l)
    printf '| %d | pepkit | %.2f | %.2f | %.2f | %s |\n' "$r" \
        "$(echo "$total - $run" | bc -l)" "$run" "$total" "$gp"
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
