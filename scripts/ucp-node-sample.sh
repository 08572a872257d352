#!/usr/bin/env bash
# ucp-node-sample.sh: the UCP Node.js sample server (the reference REST
# implementation of github.com/Universal-Commerce-Protocol/samples,
# rest/nodejs, at a pinned commit) as a peer to measure the platform
# against, by hand (never in make test or CI: it needs node, npm and the
# npm registry). See scripts/lib/ucp-node.sh for where it comes from and
# the two lines it changes.
#
#   scripts/ucp-node-sample.sh setup          fetch and npm ci into UCP_NODE_DIR (once)
#   scripts/ucp-node-sample.sh run [PORT]     set up if needed, serve on PORT (default 3000) until Ctrl-C
#
# UCP_NODE_DIR (default .bcp/ucp-samples in the repository) holds it;
# UCP_SAMPLES_SRC=/path/to/samples copies a local checkout instead of
# cloning; UCP_SAMPLES_COMMIT picks another commit; UCP_NODE_AS_SHIPPED=1
# keeps its per-request logger as shipped. While it runs, drive it with
# the same REST purchase as the platform's (rest.go in cmd/bcpbench):
#
#   go run ./cmd/bcpbench --peer ucp-node --target 127.0.0.1:PORT --target-pid PID \
#       --concurrency 8 --duration 10s --sweep '' --out '' --svg ''
#
# make bench-peer (scripts/bench-peer.sh) does it all: the sample and a
# bcpd dev side by side, driven in turn, with the ratio.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
. "$root/scripts/lib/ucp-node.sh"
dir=${UCP_NODE_DIR:-$root/.bcp/ucp-samples}
cmd=${1:-run}
case $cmd in
setup)
  ucp_node_setup "$dir"
  echo "ucp-node: ready in $dir/rest/nodejs" >&2
  ;;
run)
  port=${2:-3000}
  ucp_node_setup "$dir"
  log=$dir/server.log
  nodepid=
  trap 'ucp_node_stop "$nodepid"' EXIT INT TERM
  ucp_node_start "$dir" "$port" "$log"
  ucp_node_wait "$port" "$log" "$nodepid"
  echo "ucp-node: serving on 127.0.0.1:$port, pid $nodepid (its log: $log); Ctrl-C stops it. Drive it with" >&2
  echo "  go run ./cmd/bcpbench --peer ucp-node --target 127.0.0.1:$port --target-pid $nodepid --concurrency 8 --duration 10s --sweep '' --out '' --svg ''" >&2
  wait "$nodepid"
  ;;
*)
  echo "usage: ucp-node-sample.sh setup | run [PORT]" >&2
  exit 2
  ;;
esac
