# Sourced by the bench scripts: starts a `bcpd dev` as a separate process.
#
#   start_bcpd_dev BCPD_BINARY DATA_DIR PORT_BASE LOG [VAR=value ...]
#                                                       sets $devpid (and $simpid)
#   wait_bcpd_dev DATA_DIR LOG PID                      until it is serving
#   stop_bcpd_dev PID                                   Ctrl-C, then kill (its simulator too)
#   target_flags DATA_DIR PORT_BASE PID                 bcpbench --target flags
#
# Listeners: public PORT_BASE+80, internal +90, webhooks +443, the PSP
# simulator's API Pix +444 and control +445 (flags an older bcpd lacks are
# left out).
#
# The PSP simulator is the outside world (a real merchant's PSP runs
# elsewhere), so it runs as a process of its own: `bcpbench pspsim` (the
# bcpbench binary beside BCPD_BINARY, or $BCPBENCH_BIN), on a private
# PostgreSQL of its own (fsync off, not measured), its dev PKI and control
# token in DATA_DIR-pspsim/, its log beside LOG (LOG minus .log, plus
# -pspsim.log); bcpd dev pays at it (--pspsim-url, --dev-pki-dir and
# BCP_PSPSIM_TOKEN), and its TLS, OAuth2, card API and ledger SQL count
# neither in bcpd's CPU nor in its cluster's. A bcpd whose `dev --help`
# lacks "dev then hosts none" (revisions before it, such as 6de9e8d) can
# only host its simulators in process: their CPU and SQL are then counted
# with bcpd's (about 18 % of the process, plus its statements), and the
# two kinds of figure do not compare. BENCH_PSPSIM=inprocess runs a new
# bcpd that way too (bench-ab.sh does, when one side is old).

declare -gA bcpd_dev_sims=() # bcpd dev's PID → its simulator's

start_bcpd_dev() {
  local bin=$1 data=$2 base=$3 log=$4 help
  shift 4 # the rest: its environment (VAR=value ...)
  help=$("$bin" dev --help 2>&1 || true)
  local args=(dev --data-dir "$data" --public-addr "127.0.0.1:$((base + 80))" --internal-addr "127.0.0.1:$((base + 90))")
  local envs=("$@")
  simpid=
  [[ $help == *-no-demo-history* ]] && args+=(--no-demo-history)
  [[ $help == *-webhook-addr* ]] && args+=(--webhook-addr "127.0.0.1:$((base + 443))")
  if [[ $help == *"dev then hosts none"* && ${BENCH_PSPSIM:-} != inprocess ]]; then
    local sim="$data-pspsim" bench=${BCPBENCH_BIN:-$(dirname "$bin")/bcpbench}
    mkdir -p "$sim"
    chmod 755 "$sim" # PostgreSQL runs as its own user when we are root
    rm -f "$sim/control-url"
    "$bench" pspsim --dev-pki-dir "$sim/pki" --token-file "$sim/token" --data-dir "$sim" --url-file "$sim/control-url" \
      --pix-addr "127.0.0.1:$((base + 444))" --control-addr "127.0.0.1:$((base + 445))" >"${log%.log}-pspsim.log" 2>&1 &
    simpid=$!
    for _ in $(seq 1 600); do
      [ -s "$sim/control-url" ] && break
      if ! kill -0 "$simpid" 2>/dev/null; then
        echo "bcpbench pspsim exited; the end of its log (${log%.log}-pspsim.log):" >&2
        tail -20 "${log%.log}-pspsim.log" >&2
        return 1
      fi
      sleep 0.5
    done
    [ -s "$sim/control-url" ] || { echo "bcpbench pspsim not serving after 5 minutes" >&2; stop_pid "$simpid"; return 1; }
    args+=(--pspsim-url "$(cat "$sim/control-url")" --dev-pki-dir "$sim/pki")
    envs+=("BCP_PSPSIM_TOKEN=$(cat "$sim/token")")
    echo "bcpd dev ($bin): PSP simulator in a process of its own, not counted ($(cat "$sim/control-url"), pid $simpid)" >&2
  else
    echo "bcpd dev ($bin): PSP simulator in process, counted with bcpd and its PostgreSQL" >&2
    [[ $help == *-pspsim-pix-addr* ]] && args+=(--pspsim-pix-addr "127.0.0.1:$((base + 444))" --pspsim-control-addr "127.0.0.1:$((base + 445))")
  fi
  env "${envs[@]}" "$bin" "${args[@]}" >"$log" 2>&1 &
  devpid=$!
  [ -z "$simpid" ] || bcpd_dev_sims[$devpid]=$simpid
}

# pspsim_separate BCPD_BINARY: whether that bcpd dev can pay at a simulator
# of its own process (see above).
pspsim_separate() {
  local help
  help=$("$1" dev --help 2>&1 || true)
  [[ $help == *"dev then hosts none"* ]]
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

stop_pid() {
  local pid=$1
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -INT "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
}

stop_bcpd_dev() {
  local pid=$1
  [ -n "$pid" ] || return 0
  stop_pid "$pid"
  stop_pid "${bcpd_dev_sims[$pid]:-}" # after bcpd: it may still be calling it
  unset "bcpd_dev_sims[$pid]"
}

target_flags() {
  local data=$1 base=$2 pid=$3
  echo --target "127.0.0.1:$((base + 80))" --target-internal "127.0.0.1:$((base + 90))" \
    --operator-token "$(cat "$data/operator-token")" --target-pid "$pid" --target-pgdata "$data/pgdata"
}
