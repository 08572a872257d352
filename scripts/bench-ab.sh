#!/usr/bin/env bash
# bench-ab.sh: compares two revisions' throughput by running their load
# generators AT THE SAME TIME, so that both see the same machine.
#
#   scripts/bench-ab.sh REV_A REV_B [ROUNDS] [bcpbench flags...]
#
# On a shared VM whole runs drift by ±20 % from one minute to the next, so
# a before/after pair of sequential runs cannot see a 5–10 % change. Here
# each round starts both builds' `bcpbench` (each with its own platform and
# private PostgreSQL, identical flags) together, alternating which starts
# first, and prints each side's closed-loop rates, its CPU per purchase
# (process + PostgreSQL) and B/A. Both share the
# two vCPUs, so the absolute rates are about half a solo run's; the ratio
# is what this measures. One round still spreads by about ±10 % (the same
# build on both sides: B/A 0.94–1.16), so run several and look for a side
# that leads in all of them. Default flags: 20 merchants, 16 agents, 10 s
# phases, no open-loop sweep.
set -euo pipefail
a=${1:?usage: bench-ab.sh REV_A REV_B [ROUNDS] [bcpbench flags...]}
b=${2:?usage: bench-ab.sh REV_A REV_B [ROUNDS] [bcpbench flags...]}
rounds=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
flags=(--tenants 20 --concurrency 16 --duration 10s --warmup 3s --sweep '' --out '' --svg '' "$@")

root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'for w in "$work"/wt-*; do git -C "$root" worktree remove --force "$w" >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT
for side in a b; do
  rev=${!side}
  git -C "$root" worktree add --detach "$work/wt-$side" "$rev" >/dev/null 2>&1
  (cd "$work/wt-$side" && go build -o "$work/bcpbench-$side" ./cmd/bcpbench)
done
# Builds that have the noop_durable phase skip it, so both sides' phases
# start at the same times whatever the revisions.
side_flags() {
  # (the help is read whole first: under pipefail, grep -q stopping early
  # could fail the pipeline with the writer's SIGPIPE)
  local help
  help=$("$work/bcpbench-$1" --help 2>&1 || true)
  if [[ $help == *-durable-noop* ]]; then
    echo --durable-noop=false
  fi
}
extra_a=$(side_flags a) extra_b=$(side_flags b)

# Both sides with durable commits, whatever their build does: builds from
# before issue 23 start their PostgreSQL with fsync and full-page writes
# off. A postgres on PATH that drops those two settings (and an initdb
# beside it, which pgserver needs in the same directory) makes every side
# run as production does; a figure bought with durability does not count.
real=$(dirname "$(readlink -f "$(command -v initdb || ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")")
mkdir -p "$work/pgbin"
printf '#!/bin/sh\nexec %s/initdb "$@"\n' "$real" >"$work/pgbin/initdb"
cat >"$work/pgbin/postgres" <<EOS
#!/bin/bash
args=()
while [ \$# -gt 0 ]; do
  if [ "\$1" = -c ] && { [ "\$2" = fsync=off ] || [ "\$2" = full_page_writes=off ]; }; then shift 2; continue; fi
  args+=("\$1"); shift
done
exec $real/postgres "\${args[@]}"
EOS
chmod 755 "$work/pgbin/initdb" "$work/pgbin/postgres"
chmod 755 "$work"
export PATH="$work/pgbin:$PATH"

rates() { # phase rates (done/s) from a bcpbench report: noop create purchase
  sed -E 's/ +/ /g' "$1" | grep -oE '^(noop|create_checkout|purchase) closed [0-9]+ [0-9.]+' | awk '{printf "%s ", $4}'
}
cpu() { # the purchase phase's CPU per purchase (ms): process + PostgreSQL
  grep -oE 'CPU: process [0-9.]+ s \([0-9.]+ ms/op\), PostgreSQL [0-9.]+ s \([0-9.]+ ms/op\)' "$1" | tail -1 |
    sed -E 's/.*\(([0-9.]+) ms\/op\).*\(([0-9.]+) ms\/op\)/\1+\2/'
}
# Both sides run in the same minutes, so their CPU per purchase is measured
# on the same machine too: a change too small for the rates' spread can
# show there (round 10).
printf '%-6s %-28s %-28s %-22s %s\n' round "A: noop create purchase" "B: noop create purchase" "B/A: create purchase" "CPU/purchase ms A | B (B/A)"
for r in $(seq 1 "$rounds"); do
  first=a second=b
  if (( r % 2 == 0 )); then first=b second=a; fi
  ef=extra_$first es=extra_$second
  "$work/bcpbench-$first" "${flags[@]}" ${!ef} >"$work/$first.txt" 2>&1 &
  pid=$!
  "$work/bcpbench-$second" "${flags[@]}" ${!es} >"$work/$second.txt" 2>&1 || { cat "$work/$second.txt" >&2; exit 1; }
  wait "$pid" || { cat "$work/$first.txt" >&2; exit 1; }
  ra=($(rates "$work/a.txt")) rb=($(rates "$work/b.txt"))
  ca=$(cpu "$work/a.txt") cb=$(cpu "$work/b.txt")
  printf '%-6s %-28s %-28s %-22s %s\n' "$r" "${ra[*]}" "${rb[*]}" \
    "$(awk -v ca="${ra[1]}" -v cb="${rb[1]}" -v pa="${ra[2]}" -v pb="${rb[2]}" 'BEGIN{printf "%.2f %.2f", cb/ca, pb/pa}')" \
    "${ca:--} | ${cb:--} ($(awk -v a="$ca" -v b="$cb" 'BEGIN{split(a, x, "+"); split(b, y, "+"); s = x[1]+x[2]; if (s > 0 && b != "") printf "%.2f", (y[1]+y[2])/s; else printf "-"}'))"
done
