# Sourced by the bench scripts: starts a `bcpd dev` as a separate process.
#
#   start_bcpd_dev BCPD_BINARY DATA_DIR PORT_BASE LOG [VAR=value ...]
#                                                       sets $devpid
#   wait_bcpd_dev DATA_DIR LOG PID                      until it is serving
#   stop_bcpd_dev PID                                   Ctrl-C, then kill
#   target_flags DATA_DIR PORT_BASE PID                 bcpbench --target flags
#
# Listeners: public PORT_BASE+80, internal +90, webhooks +443, the PSP
# simulator's API Pix +444 and control +445 (flags an older bcpd lacks are
# left out: it runs its simulators in process).

start_bcpd_dev() {
  local bin=$1 data=$2 base=$3 log=$4 help
  shift 4 # the rest: its environment (VAR=value ...)
  help=$("$bin" dev --help 2>&1 || true)
  local args=(dev --data-dir "$data" --public-addr "127.0.0.1:$((base + 80))" --internal-addr "127.0.0.1:$((base + 90))")
  [[ $help == *-no-demo-history* ]] && args+=(--no-demo-history)
  [[ $help == *-webhook-addr* ]] && args+=(--webhook-addr "127.0.0.1:$((base + 443))")
  [[ $help == *-pspsim-pix-addr* ]] && args+=(--pspsim-pix-addr "127.0.0.1:$((base + 444))" --pspsim-control-addr "127.0.0.1:$((base + 445))")
  env "$@" "$bin" "${args[@]}" >"$log" 2>&1 &
  devpid=$!
}

wait_bcpd_dev() {
  local data=$1 log=$2 pid=$3
  for _ in $(seq 1 600); do
    [ -f "$data/dev.json" ] && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "bcpd dev exited; the end of its log ($log):" >&2
      tail -20 "$log" >&2
      return 1
    fi
    sleep 0.5
  done
  echo "bcpd dev not serving after 5 minutes ($log)" >&2
  return 1
}

stop_bcpd_dev() {
  local pid=$1
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -INT "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
}

target_flags() {
  local data=$1 base=$2 pid=$3
  echo --target "127.0.0.1:$((base + 80))" --target-internal "127.0.0.1:$((base + 90))" \
    --operator-token "$(cat "$data/operator-token")" --target-pid "$pid" --target-pgdata "$data/pgdata"
}
