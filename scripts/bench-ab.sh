#!/usr/bin/env bash
# bench-ab.sh: compares two revisions as users run them, AT THE SAME TIME,
# so that both see the same machine.
#
#   scripts/bench-ab.sh REV_A REV_B [ROUNDS] [bcpbench flags...]
#
# Each side is its revision's `bcpd dev`, a separate process with its own
# private PostgreSQL (durable commits: bcpbench refuses a cluster started
# with fsync or full-page writes off), both started once and kept for all
# rounds. One load generator, built from the working tree, drives both
# over loopback HTTP; each round starts the two drivers together,
# alternating which starts first, and prints each side's closed-loop
# rates, its CPU per purchase (bcpd + its PostgreSQL, from /proc; the load
# generator is not counted) and B/A. On a shared VM whole runs drift by
# ±20 % from one minute to the next, so sequential pairs cannot see a
# 5–10 % change; a round still spreads by about ±10 %, so run several and
# look for a side that leads in all of them. Default flags: 20 merchants,
# 8 agents, card purchases, 10 s phases, no open-loop sweep; add
# "--concurrency 1" for one agent, where group commit hides nothing.
#
# The PSP simulator runs in a process of its own, outside the figures
# (scripts/lib/bcpd-dev.sh), on every side whose bcpd dev can pay at one
# there. An older revision (such as 6de9e8d, before issue 31) cannot: its
# simulators were Go calls inside the platform writing to its own
# cluster, and they stay in its figure. That is each revision as a
# merchant runs it — the newer one pays a PSP elsewhere over the wire,
# whose client side it counts — so it is the default;
# BENCH_PSPSIM=inprocess makes every side host its simulator in process.
#
# AB_ENV_A / AB_ENV_B: environment for one side's bcpd ("VAR=value ..."),
# e.g. tracing at 1 % on B against the same build without:
#   AB_ENV_B="OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:27318 OTEL_TRACES_SAMPLER_ARG=0.01"
# When either names an OTLP endpoint, a sink that accepts and discards
# exports (bcpbench otlp-sink) listens on 127.0.0.1:27318.
set -euo pipefail
a=${1:?usage: bench-ab.sh REV_A REV_B [ROUNDS] [bcpbench flags...]}
b=${2:?usage: bench-ab.sh REV_A REV_B [ROUNDS] [bcpbench flags...]}
rounds=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
flags=(--tenants 20 --concurrency 8 --pix-share 0 --duration 10s --warmup 3s --sweep '' --out '' --svg '' "$@")

root=$(git rev-parse --show-toplevel)
. "$root/scripts/lib/bcpd-dev.sh"
work=$(mktemp -d)
chmod 755 "$work" # PostgreSQL runs as its own user when we are root
pid_a= pid_b=
trap 'stop_bcpd_dev "$pid_a"; stop_bcpd_dev "$pid_b"; [ -z "${sink:-}" ] || kill -INT "$sink" 2>/dev/null; for w in "$work"/wt-*; do git -C "$root" worktree remove --force "$w" >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/bcpbench" ./cmd/bcpbench)
for side in a b; do
  rev=${!side}
  git -C "$root" worktree add --detach "$work/wt-$side" "$rev" >/dev/null 2>&1
  (cd "$work/wt-$side" && go build -o "$work/bcpd-$side" ./cmd/bcpd)
done
for side in a b; do
  if ! pspsim_separate "$work/bcpd-$side"; then
    echo "bench-ab: side $side (${!side}) hosts its simulators in process: its figure includes them" >&2
  fi
done
base_a=28000 base_b=29000
sink=
if [[ "${AB_ENV_A:-} ${AB_ENV_B:-}" == *OTLP* ]]; then
  "$work/bcpbench" otlp-sink --addr 127.0.0.1:27318 2>"$work/sink.log" &
  sink=$!
fi
read -ra env_a <<<"${AB_ENV_A:-}"
read -ra env_b <<<"${AB_ENV_B:-}"
start_bcpd_dev "$work/bcpd-a" "$work/data-a" $base_a "$work/bcpd-a.log" "${env_a[@]}"; pid_a=$devpid
start_bcpd_dev "$work/bcpd-b" "$work/data-b" $base_b "$work/bcpd-b.log" "${env_b[@]}"; pid_b=$devpid
wait_bcpd_dev "$work/data-a" "$work/bcpd-a.log" "$pid_a"
wait_bcpd_dev "$work/data-b" "$work/bcpd-b.log" "$pid_b"
read -ra target_a <<<"$(target_flags "$work/data-a" $base_a "$pid_a")"
read -ra target_b <<<"$(target_flags "$work/data-b" $base_b "$pid_b")"

rates() { # phase rates (done/s) from a bcpbench report: create purchase
  sed -E 's/ +/ /g' "$1" | grep -oE '^(create_checkout|purchase) closed [0-9]+ [0-9.]+' | awk '{printf "%s ", $4}'
}
cpu() { # the purchase phase's CPU per purchase (ms): bcpd + PostgreSQL
  grep -oE 'CPU: process [0-9.]+ s \([0-9.]+ ms/op\), PostgreSQL [0-9.]+ s \([0-9.]+ ms/op\)' "$1" | tail -1 |
    sed -E 's/.*\(([0-9.]+) ms\/op\).*\(([0-9.]+) ms\/op\)/\1+\2/'
}
p50() { # complete_checkout's p50 (ms) in the purchase phase
  sed -E 's/ +/ /g' "$1" | grep -oE ' complete_checkout [0-9]+ [0-9.]+ [0-9.]+' | tail -1 | awk '{print $4}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if (a > 0 && b != "") printf "%.2f", b/a; else printf "-"}'; }
printf '%-6s %-18s %-18s %-16s %-30s %s\n' round "A: create purch." "B: create purch." "B/A: create purch." "CPU/purchase ms A | B (B/A)" "complete p50 ms A | B (B/A)"
for r in $(seq 1 "$rounds"); do
  first=a second=b
  if (( r % 2 == 0 )); then first=b second=a; fi
  tf=target_$first[@] ts=target_$second[@]
  "$work/bcpbench" "${!tf}" "${flags[@]}" >"$work/$first.txt" 2>&1 &
  pid=$!
  "$work/bcpbench" "${!ts}" "${flags[@]}" >"$work/$second.txt" 2>&1 || { cat "$work/$second.txt" >&2; exit 1; }
  wait "$pid" || { cat "$work/$first.txt" >&2; exit 1; }
  ra=($(rates "$work/a.txt")) rb=($(rates "$work/b.txt"))
  ca=$(cpu "$work/a.txt") cb=$(cpu "$work/b.txt")
  sa=$(awk -v c="$ca" 'BEGIN{split(c, x, "+"); print x[1]+x[2]}') sb=$(awk -v c="$cb" 'BEGIN{split(c, x, "+"); print x[1]+x[2]}')
  la=$(p50 "$work/a.txt") lb=$(p50 "$work/b.txt")
  printf '%-6s %-18s %-18s %-18s %-30s %s\n' "$r" "${ra[*]}" "${rb[*]}" \
    "$(ratio "${ra[0]}" "${rb[0]}") $(ratio "${ra[1]}" "${rb[1]}")" \
    "${ca:--} | ${cb:--} ($(ratio "$sa" "$sb"))" "${la:--} | ${lb:--} ($(ratio "$la" "$lb"))"
done
if [ -n "$sink" ]; then
  # What the traced side exported, as evidence that tracing was on.
  kill -INT "$sink" 2>/dev/null || true
  wait "$sink" 2>/dev/null || true
  sink=
  cat "$work/sink.log" >&2
fi
