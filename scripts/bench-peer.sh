#!/usr/bin/env bash
# bench-peer.sh: the platform against a peer on the same machine in the
# same run: the UCP Node.js sample server (scripts/ucp-node-sample.sh,
# scripts/lib/ucp-node.sh; one Node process, SQLite in it) and a
# `bcpd dev` (its own durable PostgreSQL, scripts/lib/bcpd-dev.sh), both
# started once and kept for all rounds, both driven by bcpbench from
# another process over loopback HTTP with the same REST purchase (create
# with the shipping address → update with the option and a discount code
# → complete with a card token → get the order; cmd/bcpbench/rest.go).
# Run by hand, never in make test or CI: it needs node, npm and the npm
# registry (the first run sets the sample up: npm ci, a few minutes).
#
#   scripts/bench-peer.sh [ROUNDS] [bcpbench flags...]
#   make bench-peer [PEER_ROUNDS=3] [PEER_FLAGS="--concurrency 1"]
#
# After a warm-up round that is not counted, each round drives the two
# in turn (alternating which goes first), so each has the machine to
# itself while it is measured, and prints each one's closed-loop rates
# (create_checkout alone, whole purchases), its CPU per purchase from
# /proc (bcpd + its PostgreSQL; the Node process, its worker threads
# included; the load generator is not counted), its complete_checkout
# p50, node/bcpd of the CPU per purchase (above 1: the platform spends
# less) and bcpd/node of the purchases per second, then the medians.
# Absolute figures do not travel between machines; these ratios, taken
# minutes apart on one machine, do. The sample writes SQLite in one
# thread, an fsync per statement, so its rate follows the disk's fsync
# latency (it leaves CPU idle); CPU per purchase is the figure that
# compares. Default flags: 20 merchants (bcpd), 8 agents, 10 s phases,
# no open-loop sweep; add "--concurrency 1" for one agent,
# "--duration 5s --warmup 2s" for a short run (short phases end with
# purchases half done, a few % of CPU without a purchase counted).
#
# Ports: bcpd dev at BENCH_PORT_BASE (default 28000; public +80), the
# sample at BENCH_PORT_BASE+300. UCP_NODE_DIR, UCP_SAMPLES_SRC,
# UCP_SAMPLES_COMMIT and UCP_NODE_AS_SHIPPED as for ucp-node-sample.sh.
# The bcpbench reports of the last round are kept in BENCH_OUT (default
# .bcp/bench), with the sample's log; PEER_PAUSE (default 3) seconds
# separate two runs.
set -euo pipefail
rounds=${1:-3}
shift $(( $# < 1 ? $# : 1 ))
flags=(--protocol rest --tenants 20 --concurrency 8 --duration 10s --warmup 3s --sweep '' --out '' --svg '' "$@")

root=$(git rev-parse --show-toplevel)
. "$root/scripts/lib/bcpd-dev.sh"
. "$root/scripts/lib/ucp-node.sh"
base=${BENCH_PORT_BASE:-28000}
node_port=$((base + 300))
sample=${UCP_NODE_DIR:-$root/.bcp/ucp-samples}
out=${BENCH_OUT:-$root/.bcp/bench}
mkdir -p "$out"
work=$(mktemp -d)
chmod 755 "$work" # PostgreSQL runs as its own user when we are root
devpid= nodepid=
trap 'stop_bcpd_dev "$devpid"; ucp_node_stop "$nodepid"; rm -rf "$work"' EXIT

ucp_node_setup "$sample"
echo "bench-peer: building bcpd and bcpbench ..." >&2
(cd "$root" && go build -o "$work/bcpd" ./cmd/bcpd && go build -o "$work/bcpbench" ./cmd/bcpbench)
echo "bench-peer: starting bcpd dev (log: $out/bcpd.log) and the UCP Node sample on 127.0.0.1:$node_port (log: $out/ucp-node.log) ..." >&2
start_bcpd_dev "$work/bcpd" "$work/data" "$base" "$out/bcpd.log"
ucp_node_start "$sample" "$node_port" "$out/ucp-node.log"
wait_bcpd_dev "$work/data" "$out/bcpd.log" "$devpid"
ucp_node_wait "$node_port" "$out/ucp-node.log" "$nodepid"
read -ra target_bcpd <<<"$(target_flags "$work/data" "$base" "$devpid")"
target_node=(--peer ucp-node --target "127.0.0.1:$node_port" --target-pid "$nodepid")

rates() { # phase rates (done/s) from a bcpbench report: create purchase
  sed -E 's/ +/ /g' "$1" | grep -oE '^(create_checkout|purchase) closed [0-9]+ [0-9.]+' | awk '{printf "%s ", $4}'
}
cpu() { # the purchase phase's CPU per purchase (ms): the server + its PostgreSQL
  grep -oE 'CPU: process [0-9.]+ s \([0-9.]+ ms/op\), PostgreSQL [0-9.]+ s \([0-9.]+ ms/op\)' "$1" | tail -1 |
    sed -E 's/.*\(([0-9.]+) ms\/op\).*\(([0-9.]+) ms\/op\)/\1 \2/' | awk '{printf "%.1f", $1 + $2}'
}
p50() { # complete_checkout's p50 (ms) in the purchase phase
  sed -E 's/ +/ /g' "$1" | grep -oE ' complete_checkout [0-9]+ [0-9.]+ [0-9.]+' | tail -1 | awk '{print $4}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if (a > 0 && b != "") printf "%.2f", b/a; else printf "-"}'; }
drive() { # drive SIDE [FLAGS...]: one bcpbench run against bcpd or node, its report in $work/SIDE.txt
  local side=$1 t
  shift
  t=target_$side[@]
  "$work/bcpbench" "${!t}" "${flags[@]}" "$@" >"$work/$side.txt" 2>&1 || { cat "$work/$side.txt" >&2; exit 1; }
  cp "$work/$side.txt" "$out/bench-peer-$side.txt"
  sleep "${PEER_PAUSE:-3}" # what a run leaves behind (bcpd's jobs, the sample's log writes) settles before the next
}

echo "bench-peer: $(date -u +%FT%TZ), loadavg $(cut -d' ' -f1-3 /proc/loadavg), flags:$(printf ' %q' "${flags[@]}")" >&2
# A round that is not counted: the first run of a freshly started server
# (connections, caches, Node's JIT) costs up to three times the next.
echo "bench-peer: an uncounted warm-up round ..." >&2
drive bcpd --duration 2s --warmup 1s
drive node --duration 2s --warmup 1s
fmt='%-5s  %-21s  %-21s  %-24s  %-13s  %-18s  %s\n'
printf "$fmt" round "bcpd create|purch./s" "node create|purch./s" "CPU ms/purchase bcpd|node" "CPU node/bcpd" "purch./s bcpd/node" "complete p50 ms bcpd|node"
cpu_ratios=() rate_ratios=()
for r in $(seq 1 "$rounds"); do
  if (( r % 2 == 1 )); then drive bcpd; drive node; else drive node; drive bcpd; fi
  rb=($(rates "$work/bcpd.txt")) rn=($(rates "$work/node.txt"))
  cb=$(cpu "$work/bcpd.txt") cn=$(cpu "$work/node.txt")
  rc=$(ratio "$cb" "$cn") rr=$(ratio "${rn[1]:-}" "${rb[1]:-}")
  cpu_ratios+=("$rc") rate_ratios+=("$rr")
  printf "$fmt" "$r" "${rb[0]:--} | ${rb[1]:--}" "${rn[0]:--} | ${rn[1]:--}" "${cb:--} | ${cn:--}" "$rc" "$rr" \
    "$(p50 "$work/bcpd.txt") | $(p50 "$work/node.txt")"
done
median() { printf '%s\n' "$@" | grep -v '^-$' | sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "median of $rounds rounds: CPU per purchase node/bcpd $(median "${cpu_ratios[@]}"), purchases/s bcpd/node $(median "${rate_ratios[@]}")"
echo "bench-peer: done $(date -u +%FT%TZ), loadavg $(cut -d' ' -f1-3 /proc/loadavg); the last round's reports: $out/bench-peer-bcpd.txt, $out/bench-peer-node.txt" >&2
