#!/usr/bin/env bash
# make ha: a local high-availability formation on loopback — a
# pg_auto_failover monitor, a primary and a synchronous standby (Debian's
# postgresql-15-auto-failover), the platform migrated on it, and bcpd one
# role per process on the multi-host URL (target_session_attrs=read-write),
# as deploy/README.md describes a deployment. Ports (defaults; the
# HA_*_PORT variables move each block):
#
#   HA_PG_PORT=6000        monitor 6000, node1 6001, node2 6002
#   HA_PUBLIC_PORT=8080    edge-1 8080, edge-2 8081 (agents, browsers)
#   HA_WEBHOOK_PORT=8443   edge-1 8443, edge-2 8444 (PSP webhooks, TLS asking for the PSP's
#                          client certificate; payments registers edge-1's)
#   HA_INTERNAL_PORT=9090  edge-1 9090, tenants 9091, catalog 9092, pricing 9093,
#                          checkout-1 9094, payments 9095, orders 9096,
#                          edge-2 9097, checkout-2 9098, demo 9099, pspsim 9100
#   HA_PSPSIM_PORT=9443    the PSP simulator's API Pix (mTLS) 9443, its control and card API 9444
#
# Each edge calls its own checkout process (edge-1 → checkout-1, edge-2 →
# checkout-2); `bcpd pspsim` is the sandbox's PSP (the payments process pays
# sandbox handlers through it over the wire; its webhooks come back over
# mTLS to edge-1's webhook listener), started first: it creates the dev PKI
# in $HA_DIR/pki that every process shares (its certificates, the webhook
# listeners'); `bcpd demo` seeds the demo merchant and serves its agent's
# profile. Kill the primary's PostgreSQL and the standby is promoted; every
# process reconnects to it. Kill a bcpd and start it again with
# $HA_DIR/run/<name>. Ctrl-C stops everything, restarted processes
# included. The formation keeps its ports and data in $HA_DIR (default
# .bcp/ha); deploy/README.md, "Database: PostgreSQL with pg_auto_failover",
# explains the production setup this mirrors.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$(realpath -m "${HA_DIR:-.bcp/ha}")
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
pg=${HA_PG_PORT:-6000}
pub=${HA_PUBLIC_PORT:-8080}
hook=${HA_WEBHOOK_PORT:-8443}
int=${HA_INTERNAL_PORT:-9090}
psp=${HA_PSPSIM_PORT:-9443}

if ! command -v pg_autoctl >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15-auto-failover pg-auto-failover-cli
  else
    echo "ha: pg_autoctl is missing; run: sudo apt-get install -y postgresql-15-auto-failover pg-auto-failover-cli" >&2
    exit 1
  fi
fi

# name:internal-port of every bcpd, in start order (the simulator first: it
# creates the dev PKI the others load; the demo last: it seeds through the
# others).
procs=(pspsim:$((int + 10)) tenants:$((int + 1)) catalog:$((int + 2)) pricing:$((int + 3)) orders:$((int + 6)) payments:$((int + 5))
  checkout-1:$((int + 4)) checkout-2:$((int + 8)) edge-1:$int edge-2:$((int + 7)) demo:$((int + 9)))
# A port something else listens on would send our readiness checks to it.
busy=()
for p in $pg $((pg + 1)) $((pg + 2)) $pub $((pub + 1)) $hook $((hook + 1)) $psp $((psp + 1)) $(seq "$int" $((int + 10))); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then busy+=("$p"); fi
done
if [ ${#busy[@]} -gt 0 ]; then
  echo "ha: ports in use: ${busy[*]} (another make ha or make run?); move them with HA_PG_PORT, HA_PUBLIC_PORT, HA_WEBHOOK_PORT, HA_INTERNAL_PORT, HA_PSPSIM_PORT" >&2
  exit 1
fi

# pg_autoctl refuses to run as root: the formation runs as postgres.
# Its state files (kept under XDG_CONFIG_HOME/XDG_DATA_HOME, keyed by the
# data directory) live in $dir too, so a formation is whole in one folder.
as_pg() {
  local env="export PATH=$bin:\$PATH XDG_CONFIG_HOME=$dir/xdg/config XDG_DATA_HOME=$dir/xdg/data;"
  if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$env $*"; else bash -c "$env $*"; fi
}
mkdir -p "$dir" "$dir/run" "$dir/log" "$dir/pid"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$dir" "$dir/log"

stop_formation() {
  # The standby first: stopping the primary first could set off a failover.
  local order="node2 node1"
  if [ "$(psql "postgres://postgres@127.0.0.1:$((pg + 1))/postgres?connect_timeout=2" -qAtc 'SELECT pg_is_in_recovery()' 2>/dev/null)" = t ]; then
    order="node1 node2"
  fi
  for n in $order monitor; do
    as_pg "pg_autoctl stop --pgdata $dir/$n" >/dev/null 2>&1 || true
    # pg_autoctl stop only signals its keeper: wait for PostgreSQL to go.
    for _ in $(seq 1 60); do [ -e "$dir/$n/postmaster.pid" ] || break; sleep 0.5; done
  done
}
# Every bcpd of the formation, started here or again by hand through its
# launcher, records its pid in $dir/pid/<name>.
bcpd_pids() {
  local f p
  for f in "$dir"/pid/*; do
    [ -e "$f" ] || continue
    p=$(cat "$f")
    # Only a live bcpd of this checkout (the pid may have been reused).
    { [ -n "$p" ] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -q "^$root/bin/bcpd "; } 2>/dev/null && echo "$p"
  done
  return 0
}
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "ha: stopping"
  local left
  left=$(bcpd_pids)
  # SIGTERM: each drains its listeners and jobs (up to ~25 s), then exits.
  [ -z "$left" ] || kill -TERM $left 2>/dev/null || true
  for _ in $(seq 1 90); do
    left=$(bcpd_pids)
    [ -n "$left" ] || break
    sleep 0.5
  done
  [ -z "$left" ] || { echo "ha: still running after 45 s, killing: $left"; kill -KILL $left 2>/dev/null || true; }
  rm -f "$dir"/pid/*
  stop_formation
  echo "ha: stopped"
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap cleanup EXIT

monitor="postgres://autoctl_node@127.0.0.1:$pg/pg_auto_failover?sslmode=disable"
if [ ! -d "$dir/monitor" ]; then
  as_pg "pg_autoctl create monitor --pgdata $dir/monitor --pgport $pg --hostname 127.0.0.1 --listen 127.0.0.1 --auth trust --no-ssl >$dir/log/monitor.log 2>&1"
fi
as_pg "(setsid pg_autoctl run --pgdata $dir/monitor >>$dir/log/monitor.log 2>&1 &)"
for _ in $(seq 1 60); do psql "postgres://postgres@127.0.0.1:$pg/pg_auto_failover?connect_timeout=2" -qAtc 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.5; done
# The monitor's failover settings, as bcpchaos --ha runs them (platform/
# chaos, MonitorSettings; deploy/README.md, "What makes the monitor fail
# over"): health checks every 2 s (timeout 2 s, two retries 1 s apart; the
# defaults are 5 s, 5 s, 2 s), a primary unhealthy once they fail and its
# keeper has been silent 5 s (default 20 s), and the promoted standby
# writable 5 s after the old primary was told to demote when its keeper
# cannot confirm it (default 30 s). A lost host (postmaster and keeper
# gone) is failed over from in ≈ 11 s instead of ≈ 50 s, a PostgreSQL that
# stays down under a live keeper in ≈ 6 s.
psql "postgres://postgres@127.0.0.1:$pg/pg_auto_failover" -qAt -v ON_ERROR_STOP=1 <<'SQL'
ALTER SYSTEM SET pgautofailover.health_check_period = 2000;
ALTER SYSTEM SET pgautofailover.health_check_timeout = 2000;
ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 1000;
ALTER SYSTEM SET pgautofailover.health_check_max_retries = 2;
ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 5000;
ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 5000;
SELECT pg_reload_conf() \gset
SQL
for n in 1 2; do
  if [ ! -d "$dir/node$n" ]; then
    as_pg "pg_autoctl create postgres --pgdata $dir/node$n --pgport $((pg + n)) --hostname 127.0.0.1 --listen 127.0.0.1 --name node$n --auth trust --no-ssl --monitor '$monitor' >$dir/log/node$n.log 2>&1"
  fi
  # A primary cut off from the monitor and its standby stops its PostgreSQL
  # after 3 s (default 20 s), before the monitor's 5 s + 5 s let the standby
  # take writes (KeeperSettings in platform/chaos).
  as_pg "pg_autoctl config set --pgdata $dir/node$n timeout.network_partition_timeout 3 >/dev/null"
  as_pg "(setsid pg_autoctl run --pgdata $dir/node$n >>$dir/log/node$n.log 2>&1 &)"
  sleep 3
done
echo "ha: waiting for a primary and a synchronous standby"
for _ in $(seq 1 120); do
  state=$(as_pg "pg_autoctl show state --pgdata $dir/monitor" 2>/dev/null || true)
  if grep -q "read-write |  *primary |  *primary" <<<"$state" && grep -q "read-only |  *secondary |  *secondary" <<<"$state"; then break; fi
  sleep 1
done
as_pg "pg_autoctl show state --pgdata $dir/monitor"

# The platform's roles (deploy/README.md): an owner that migrates, and the
# application role, a member of bcp_app, neither superuser nor BYPASSRLS.
hosts="127.0.0.1:$((pg + 1)),127.0.0.1:$((pg + 2))"
super="postgres://postgres@$hosts/postgres?target_session_attrs=read-write"
psql "$super" -qAt -v ON_ERROR_STOP=1 <<'SQL'
SELECT 'CREATE ROLE bcp_owner LOGIN CREATEROLE PASSWORD ''owner''' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'bcp_owner') \gexec
SELECT 'CREATE DATABASE bcp OWNER bcp_owner' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'bcp') \gexec
SQL
# Catalog search's extensions and LEAKPROOF functions, as a superuser
# (deploy/README.md, "Database roles"; db.SearchSetup).
psql "postgres://postgres@$hosts/bcp?target_session_attrs=read-write" -qAt -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION IF NOT EXISTS unaccent SCHEMA public;
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
ALTER FUNCTION public.word_similarity_op(text, text) LEAKPROOF;
SQL
# connect_timeout: each host gets 2 s in turn (a host that is gone does not
# refuse; deploy/README.md, "Database").
owner="postgres://bcp_owner:owner@$hosts/bcp?target_session_attrs=read-write&connect_timeout=2"
app="postgres://bcp_service:service@$hosts/bcp?target_session_attrs=read-write&connect_timeout=2"
go build -o bin/bcpd ./cmd/bcpd
go build -o bin/bcpctl ./cmd/bcpctl
./bin/bcpd migrate up --owner-database-url "$owner"
psql "$super" -qAt -v ON_ERROR_STOP=1 <<'SQL'
SELECT 'CREATE ROLE bcp_service LOGIN PASSWORD ''service'' IN ROLE bcp_app' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'bcp_service') \gexec
SQL

# Secrets every process shares, in files only this user reads: the master
# key, the operator token and the simulator's control token are kept
# between runs (sealed secrets and bcpctl need them; bcpctl --data-dir
# $dir pspsim reads pspsim-token), the internal token is new each run. The
# dev PKI (BCP_DEV_PKI_DIR) is kept too: the simulator accounts' client
# certificates, sealed by the payments service, chain to its CA.
url() { echo "http://127.0.0.1:$1"; }
umask 077
[ -s "$dir/master.key" ] || head -c32 /dev/urandom | base64 >"$dir/master.key"
[ -s "$dir/operator-token" ] || echo "bcp_op_$(head -c24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$dir/operator-token"
[ -s "$dir/pspsim-token" ] || echo "bcp_psp_$(head -c24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$dir/pspsim-token"
cat >"$dir/env" <<EOF
BCP_DATABASE_URL=$app
BCP_MASTER_KEY_FILE=$dir/master.key
BCP_INTERNAL_TOKEN=bcp_int_$(head -c24 /dev/urandom | od -An -tx1 | tr -d ' \n')
BCP_OPERATOR_TOKEN=$(cat "$dir/operator-token")
BCP_PSPSIM_TOKEN=$(cat "$dir/pspsim-token")
BCP_DEV_PKI_DIR=$dir/pki
BCP_TENANTS_URL=$(url $((int + 1)))
BCP_CATALOG_URL=$(url $((int + 2)))
BCP_PRICING_URL=$(url $((int + 3)))
BCP_CHECKOUT_URL=$(url $((int + 4)))
BCP_PAYMENTS_URL=$(url $((int + 5)))
BCP_ORDERS_URL=$(url $((int + 6)))
BCP_PUBLIC_SCHEME=http
EOF
# bcpctl --data-dir $dir finds the operator API (the tenants process) and
# the PSP simulator (its token in pspsim-token, its CA in pki/dev-ca/ca.pem).
printf '{\n  "internal_url": "%s",\n  "public_url": "%s",\n  "pspsim_control_url": "%s",\n  "pspsim_pix_url": "%s"\n}\n' \
  "$(url $((int + 1)))" "$(url $pub)" "https://127.0.0.1:$((psp + 1))" "https://127.0.0.1:$psp/api/v2" >"$dir/dev.json"
umask 022

# One launcher per process: the secrets from $dir/env, the rest as flags.
# Run one again by hand to restart a process you killed.
launcher() {
  local name=$1
  shift
  cat >"$dir/run/$name" <<EOF
#!/usr/bin/env bash
# $name of make ha; its log: $dir/log/$name.log
set -a; . $dir/env; set +a
echo \$\$ >$dir/pid/$name
exec $root/bin/bcpd $* >>$dir/log/$name.log 2>&1
EOF
  chmod 0700 "$dir/run/$name"
}
# The PSP simulator: the outside world, on the formation like the rest (its
# accounts and ledgers in schema pspsim).
launcher pspsim pspsim --internal-addr 127.0.0.1:$((int + 10)) --pspsim-pix-addr 127.0.0.1:$psp --pspsim-control-addr 127.0.0.1:$((psp + 1))
launcher tenants tenants --internal-addr 127.0.0.1:$((int + 1))
launcher catalog catalog --internal-addr 127.0.0.1:$((int + 2))
launcher pricing pricing --internal-addr 127.0.0.1:$((int + 3))
launcher checkout-1 checkout --internal-addr 127.0.0.1:$((int + 4))
# Payments pays sandbox handlers through the simulator and registers edge-1's
# webhook port with it (one address, as a load balancer's would be).
launcher payments payments --internal-addr 127.0.0.1:$((int + 5)) --pspsim-url https://127.0.0.1:$((psp + 1)) --webhook-port $hook
launcher orders orders --internal-addr 127.0.0.1:$((int + 6))
launcher checkout-2 checkout --internal-addr 127.0.0.1:$((int + 8))
# Each edge advertises its own port (agents come back to it), calls its own
# checkout process and has a TLS webhook listener for the PSP's webhooks
# (its certificate from the dev PKI).
launcher edge-1 edge --public-addr 127.0.0.1:$pub --public-port $pub --internal-addr 127.0.0.1:$int \
  --checkout-url "$(url $((int + 4)))" --operator-host operador.localhost --webhook-addr 127.0.0.1:$hook
launcher edge-2 edge --public-addr 127.0.0.1:$((pub + 1)) --public-port $((pub + 1)) --internal-addr 127.0.0.1:$((int + 7)) \
  --checkout-url "$(url $((int + 8)))" --operator-host operador.localhost --webhook-addr 127.0.0.1:$((hook + 1))
# The demo agent's API key is bound to its profile URL, so the demo keeps
# its port between runs of one $HA_DIR.
launcher demo demo --internal-addr 127.0.0.1:$((int + 9)) --data-dir "$dir/demo" --public-port $pub

declare -A pid_of
start() {
  "$dir/run/$1" &
  pid_of[$1]=$!
}
ready() {
  for _ in $(seq 1 120); do
    kill -0 "${pid_of[$1]}" 2>/dev/null || { echo "ha: $1 exited; the end of its log:" >&2; tail -20 "$dir/log/$1.log" >&2; return 1; }
    curl -fs -o /dev/null "$(url "$2")/readyz" && return 0
    sleep 0.5
  done
  echo "ha: $1 not ready on :$2 after 60 s (log $dir/log/$1.log)" >&2
  return 1
}
start pspsim
ready pspsim $((int + 10))
for p in "${procs[@]}"; do case "${p%%:*}" in pspsim | demo) ;; *) start "${p%%:*}" ;; esac; done
for p in "${procs[@]}"; do case "${p%%:*}" in pspsim | demo) ;; *) ready "${p%%:*}" "${p##*:}" ;; esac; done
start demo
ready demo $((int + 9))

cat <<EOF

ha: running on one formation ($hosts, synchronous standby), one bcpd per role:
  edge-1      agents and browsers $(url $pub)  (internal :$int, calls checkout-1; PSP webhooks https :$hook)
  edge-2      agents and browsers $(url $((pub + 1)))  (internal :$((int + 7)), calls checkout-2; PSP webhooks https :$((hook + 1)))
  services    tenants :$((int + 1)), catalog :$((int + 2)), pricing :$((int + 3)), checkout-1 :$((int + 4)),
              checkout-2 :$((int + 8)), payments :$((int + 5)), orders :$((int + 6))
              (internal listeners: connect, /metrics, /healthz, /readyz)
  pspsim      the sandbox's PSP: API Pix https://127.0.0.1:$psp/api/v2, control and card API https://127.0.0.1:$((psp + 1))
              (internal :$((int + 10))); bcpctl --data-dir $dir pspsim faults [--set SPEC|off]
  demo        loja-demo.localhost on either edge; agent profile $(url $((int + 9)))/dev/demo-agent.json,
              API key in $dir/demo/demo-api-key, admin password in $dir/demo/demo-admin-password
  operator    bcpctl --data-dir $dir tenant list   (console: http://operador.localhost:$pub/)
  logs        $dir/log/<name>.log; start a killed process again with $dir/run/<name>
  formation   XDG_CONFIG_HOME=$dir/xdg/config XDG_DATA_HOME=$dir/xdg/data pg_autoctl show state --pgdata $dir/monitor
              (as the postgres user when you are root: su postgres -c "...")
  failover    the same with "perform failover", or kill -9 the primary's postmaster (≈ 6 s), or the
              process group of its pg_autoctl with it (its host lost: ≈ 11 s); then the same with
              "run --pgdata $dir/node<n>" starts that keeper again and the node rejoins as the standby
Ctrl-C stops everything.
EOF
# Until Ctrl-C: a process that exits (killed by hand, say) is reported and
# the others keep running.
while :; do
  running=()
  for n in "${!pid_of[@]}"; do running+=("${pid_of[$n]}"); done
  if [ ${#running[@]} -eq 0 ]; then sleep 1; continue; fi
  done=
  if wait -n -p done "${running[@]}"; then rc=0; else rc=$?; fi
  for n in "${!pid_of[@]}"; do
    if [ "${pid_of[$n]}" = "${done:-}" ]; then
      echo "ha: $n exited (status $rc); start it again with $dir/run/$n"
      unset "pid_of[$n]"
    fi
  done
done
