#!/usr/bin/env bash
# bench.sh: measures the platform as a user runs it. It starts a separate
# `bcpd dev` (its own private PostgreSQL, durable commits, a fresh data
# directory, listeners at BENCH_PORT_BASE, default 28000: see
# scripts/lib/bcpd-dev.sh), drives it over loopback HTTP from another
# process (`bcpbench --target`), and counts the CPU of bcpd and of its
# PostgreSQL cluster from /proc; the load generator's own CPU is printed
# apart and left out. The PSP and card simulators are the outside world:
# they run in a process of their own (`bcpbench pspsim`, on a PostgreSQL of
# their own) and are not counted; a bcpd too old to pay at a separate
# simulator hosts it in process, and its figures include it (see
# scripts/lib/bcpd-dev.sh).
#
#   scripts/bench.sh OUT_DIR [bcpbench flags...]
#
# Agents speak MCP; "--protocol rest" drives the same card purchase over
# the REST binding. scripts/bench-peer.sh drives it against the UCP
# Node.js sample too, for a same-machine ratio.
set -euo pipefail
out=${1:?usage: bench.sh OUT_DIR [bcpbench flags...]}
shift
base=${BENCH_PORT_BASE:-28000}
root=$(git rev-parse --show-toplevel)
. "$root/scripts/lib/bcpd-dev.sh"
work=$(mktemp -d)
chmod 755 "$work" # PostgreSQL runs as its own user when we are root
devpid=
trap 'stop_bcpd_dev "$devpid"; rm -rf "$work"' EXIT

echo "bench: building bcpd and bcpbench ..." >&2
(cd "$root" && go build -o "$work/bcpd" ./cmd/bcpd && go build -o "$work/bcpbench" ./cmd/bcpbench)
mkdir -p "$out"
echo "bench: starting bcpd dev in $work/data (log: $out/bcpd.log) ..." >&2
start_bcpd_dev "$work/bcpd" "$work/data" "$base" "$out/bcpd.log"
wait_bcpd_dev "$work/data" "$out/bcpd.log" "$devpid"
# shellcheck disable=SC2046
"$work/bcpbench" $(target_flags "$work/data" "$base" "$devpid") "$@"
