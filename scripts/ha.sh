#!/usr/bin/env bash
# make ha: a local high-availability formation on loopback — a
# pg_auto_failover monitor, a primary and a synchronous standby (Debian's
# postgresql-15-auto-failover), the platform migrated on it, and two bcpd
# processes on the multi-host URL (target_session_attrs=read-write): `bcpd
# dev` (public 8080, internal 9090; it seeds the demo merchant) and `bcpd
# all` (public 8081, internal 9091). Kill the primary's PostgreSQL and the
# standby is promoted; both processes reconnect to it. Ctrl-C stops
# everything. deploy/README.md, "Database: PostgreSQL with pg_auto_failover",
# explains the production setup this mirrors.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(realpath -m "${HA_DIR:-.bcp/ha}")
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)

if ! command -v pg_autoctl >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15-auto-failover pg-auto-failover-cli
  else
    echo "ha: pg_autoctl is missing; run: sudo apt-get install -y postgresql-15-auto-failover pg-auto-failover-cli" >&2
    exit 1
  fi
fi
# pg_autoctl refuses to run as root: the formation runs as postgres.
# Its state files (kept under XDG_CONFIG_HOME/XDG_DATA_HOME, keyed by the
# data directory) live in $dir too, so a formation is whole in one folder.
as_pg() {
  local env="export PATH=$bin:\$PATH XDG_CONFIG_HOME=$dir/xdg/config XDG_DATA_HOME=$dir/xdg/data;"
  if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$env $*"; else bash -c "$env $*"; fi
}
mkdir -p "$dir"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"

pids=()
cleanup() {
  trap - INT TERM EXIT
  echo "ha: stopping"
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
  for n in node2 node1 monitor; do as_pg "pg_autoctl stop --pgdata $dir/$n" >/dev/null 2>&1 || true; done
  echo "ha: stopped"
}
trap cleanup INT TERM EXIT

monitor="postgres://autoctl_node@127.0.0.1:6000/pg_auto_failover?sslmode=disable"
if [ ! -d "$dir/monitor" ]; then
  as_pg "pg_autoctl create monitor --pgdata $dir/monitor --pgport 6000 --hostname 127.0.0.1 --auth trust --no-ssl >$dir/monitor.log 2>&1"
fi
as_pg "(setsid pg_autoctl run --pgdata $dir/monitor >>$dir/monitor.log 2>&1 &)"
sleep 2
for n in 1 2; do
  if [ ! -d "$dir/node$n" ]; then
    as_pg "pg_autoctl create postgres --pgdata $dir/node$n --pgport 600$n --hostname 127.0.0.1 --name node$n --auth trust --no-ssl --monitor '$monitor' >$dir/node$n.log 2>&1"
  fi
  as_pg "(setsid pg_autoctl run --pgdata $dir/node$n >>$dir/node$n.log 2>&1 &)"
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
hosts="127.0.0.1:6001,127.0.0.1:6002"
super="postgres://postgres@$hosts/postgres?target_session_attrs=read-write"
psql "$super" -qAt -v ON_ERROR_STOP=1 <<'SQL'
SELECT 'CREATE ROLE bcp_owner LOGIN CREATEROLE PASSWORD ''owner''' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'bcp_owner') \gexec
SELECT 'CREATE DATABASE bcp OWNER bcp_owner' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'bcp') \gexec
SQL
owner="postgres://bcp_owner:owner@$hosts/bcp?target_session_attrs=read-write"
app="postgres://bcp_service:service@$hosts/bcp?target_session_attrs=read-write"
go build -o bin/bcpd ./cmd/bcpd
go build -o bin/bcpctl ./cmd/bcpctl
./bin/bcpd migrate up --owner-database-url "$owner"
psql "$super" -qAt -v ON_ERROR_STOP=1 <<'SQL'
SELECT 'CREATE ROLE bcp_service LOGIN PASSWORD ''service'' IN ROLE bcp_app' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'bcp_service') \gexec
SQL

./bin/bcpd dev --data-dir "$dir/dev" --database-url "$app" --owner-database-url "$owner" \
  --public-addr 127.0.0.1:8080 --internal-addr 127.0.0.1:9090 >"$dir/bcpd-dev.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 60); do [ -s "$dir/dev/operator-token" ] && curl -fs -o /dev/null http://127.0.0.1:9090/readyz && break; sleep 1; done
BCP_INTERNAL_TOKEN=ha-internal-$(head -c8 /dev/urandom | od -An -tx1 | tr -d ' \n') \
BCP_OPERATOR_TOKEN=$(cat "$dir/dev/operator-token") \
  ./bin/bcpd all --database-url "$app" --master-key-file "$dir/dev/master.key" --public-scheme http --public-port 8081 \
  --public-addr 127.0.0.1:8081 --internal-addr 127.0.0.1:9091 >"$dir/bcpd-all.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 60); do curl -fs -o /dev/null http://127.0.0.1:9091/readyz && break; sleep 1; done
cat <<EOF

ha: running. Two bcpd processes on one formation ($hosts, synchronous standby):
  bcpd dev  public http://127.0.0.1:8080  internal http://127.0.0.1:9090  (log $dir/bcpd-dev.log)
  bcpd all  public http://127.0.0.1:8081  internal http://127.0.0.1:9091  (log $dir/bcpd-all.log)
  demo merchant: loja-demo.localhost, API key in $dir/dev/demo-api-key
  formation:     XDG_CONFIG_HOME=$dir/xdg/config XDG_DATA_HOME=$dir/xdg/data pg_autoctl show state --pgdata $dir/monitor
                 (as the postgres user when you are root: su postgres -c "...")
  failover:      the same with "perform failover", or kill -9 the primary's postmaster
Ctrl-C stops everything.
EOF
wait "${pids[0]}"
