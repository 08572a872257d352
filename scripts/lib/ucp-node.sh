# Sourced by scripts/ucp-node-sample.sh and scripts/bench-peer.sh: the UCP
# Node.js sample server (github.com/Universal-Commerce-Protocol/samples,
# rest/nodejs: Hono + Zod, SQLite through better-sqlite3, one Node
# process) as a peer for bcpbench's REST flow.
#
#   ucp_node_setup DIR               fetch, npm ci and patch into DIR (once per commit)
#   ucp_node_start DIR PORT LOG      fresh databases, start it; sets $nodepid
#   ucp_node_wait PORT LOG PID       until /.well-known/ucp answers
#   ucp_node_stop PID                SIGTERM, then kill
#
# Where the sample comes from: UCP_SAMPLES_SRC, a local checkout of the
# samples repository (its rest/nodejs is copied, node_modules left out),
# or else a git clone of UCP_SAMPLES_REPO at UCP_SAMPLES_COMMIT (pinned:
# the figures are of that commit). npm ci installs its lockfile's
# packages; npm 11 runs no dependency's install script that is not
# allowed, so better-sqlite3's native module (and esbuild's, which tsx
# runs on) are rebuilt when they do not load (node-gyp compiles
# better-sqlite3 from source when no prebuilt binary can be downloaded:
# a C++ compiler, make and python3, about 2 minutes).
#
# Two changes to src/index.ts, both printed by the setup:
#   - the port: PORT from the environment (3000 is written into it);
#   - the request logger is built once instead of on every request (as
#     shipped, each request builds a pino logger whose transport is a new
#     worker thread: threads pile up, and most of a request's CPU goes to
#     starting one). UCP_NODE_AS_SHIPPED=1 keeps the logger as shipped.
# Nothing else changes: the sample logs every request and every validated
# payload to its stdout (LOG), keeps its SQLite files in journal mode
# DELETE with synchronous=FULL (an fsync per write, durable as bcpd's
# commits are), and runs as its package.json's dev script does, under tsx
# (`node --import tsx src/index.ts`, without watch: its tsc output does
# not run under Node's ESM resolution). Each start copies the databases
# as shipped and raises the stock of its products to 100 000 000 (as
# shipped, 1 000 roses: a few seconds of load).

UCP_SAMPLES_REPO=${UCP_SAMPLES_REPO:-https://github.com/Universal-Commerce-Protocol/samples}
UCP_SAMPLES_COMMIT=${UCP_SAMPLES_COMMIT:-f10fc65995c7296b978b826595fdd7599607ab3f}

ucp_node_setup() {
  local dir=$1 app stamp
  app=$dir/rest/nodejs
  stamp=$app/.bcp-setup-${UCP_SAMPLES_COMMIT}${UCP_NODE_AS_SHIPPED:+-as-shipped}
  [ -f "$stamp" ] && return 0
  command -v node >/dev/null && command -v npm >/dev/null || {
    echo "ucp-node: needs node (20 or later) and npm" >&2
    return 1
  }
  # DIR is ours (it carries .bcp-ucp-node) or new: a setup starts afresh.
  if [ -n "$(ls -A "$dir" 2>/dev/null)" ] && [ ! -f "$dir/.bcp-ucp-node" ]; then
    echo "ucp-node: $dir is not empty and not a directory this script made; choose another (UCP_NODE_DIR)" >&2
    return 1
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  touch "$dir/.bcp-ucp-node"
  if [ -n "${UCP_SAMPLES_SRC:-}" ]; then
    echo "ucp-node: copying $UCP_SAMPLES_SRC/rest/nodejs into $app ..." >&2
    mkdir -p "$dir/rest"
    (cd "$UCP_SAMPLES_SRC/rest" && tar cf - --exclude=node_modules --exclude=dist nodejs) | (cd "$dir/rest" && tar xf -)
  else
    echo "ucp-node: cloning $UCP_SAMPLES_REPO at $UCP_SAMPLES_COMMIT into $dir ..." >&2
    git clone --quiet --no-checkout --filter=blob:none "$UCP_SAMPLES_REPO" "$dir/git" &&
      git -C "$dir/git" checkout --quiet "$UCP_SAMPLES_COMMIT" -- rest/nodejs &&
      mv "$dir/git/rest" "$dir/rest" || return 1
    rm -rf "$dir/git"
  fi
  [ -f "$app/package.json" ] || {
    echo "ucp-node: no rest/nodejs/package.json in $dir" >&2
    return 1
  }
  echo "ucp-node: npm ci in $app ..." >&2
  (cd "$app" && npm ci --no-audit --no-fund) >&2 || return 1
  if ! (cd "$app" && node -e "new (require('better-sqlite3'))(':memory:')" 2>/dev/null && node --import tsx -e '' 2>/dev/null); then
    echo "ucp-node: building better-sqlite3's native module and esbuild (npm rebuild) ..." >&2
    (cd "$app" && npm rebuild better-sqlite3 esbuild) >&2 || return 1
  fi
  mkdir -p "$app/databases.orig"
  cp "$app"/databases/*.db "$app/databases.orig/"
  ucp_node_patch "$app" || return 1
  touch "$stamp"
}

# ucp_node_patch makes the two changes above to APP/src/index.ts, and
# fails when the text they replace is not there (another commit).
ucp_node_patch() {
  local app=$1
  (cd "$app" && AS_SHIPPED=${UCP_NODE_AS_SHIPPED:-} node - <<'EOF'
const fs = require('fs');
let s = fs.readFileSync('src/index.ts', 'utf8');
const swap = (from, to, what) => {
  if (!s.includes(from)) {
    console.error(`ucp-node: src/index.ts: ${what}: the text to change is not there`);
    process.exit(1);
  }
  s = s.replace(from, to);
  console.error(`ucp-node: patched src/index.ts: ${what}`);
};
swap('    port: 3000,', '    port: Number(process.env.PORT || 3000),', 'the port from PORT');
if (!process.env.AS_SHIPPED) {
  const opts = `{
      quietReqLogger: true,
      transport: {
        target: 'pino-http-print',
        options: {
          destination: 1,
          all: true,
          translateTime: true,
        },
      },
    }`;
  swap(`app.use(requestId());
app.use(async (c: Context, next: () => Promise<void>) => {
  c.env.incoming.id = c.var.requestId;

  await new Promise<void>((resolve) =>
    pinoHttp(${opts})(c.env.incoming, c.env.outgoing, () => resolve()),
  );`, `const httpLogger = pinoHttp(${opts});
app.use(requestId());
app.use(async (c: Context, next: () => Promise<void>) => {
  c.env.incoming.id = c.var.requestId;

  await new Promise<void>((resolve) =>
    httpLogger(c.env.incoming, c.env.outgoing, () => resolve()),
  );`, 'one request logger, built once');
}
fs.writeFileSync('src/index.ts', s);
EOF
  )
}

ucp_node_start() {
  local dir=$1 port=$2 log=$3 app
  app=$dir/rest/nodejs
  cp "$app"/databases.orig/*.db "$app/databases/"
  (cd "$app" && node -e "
    const db = new (require('better-sqlite3'))('databases/transactions.db');
    db.prepare('UPDATE inventory SET quantity = 100000000').run();
    db.close();") || return 1
  (cd "$app" && PORT=$port exec node --import tsx src/index.ts) >"$log" 2>&1 &
  nodepid=$!
}

ucp_node_wait() {
  local port=$1 log=$2 pid=$3
  for _ in $(seq 1 120); do
    if node -e "fetch('http://127.0.0.1:$port/.well-known/ucp').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))" 2>/dev/null; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "the UCP Node sample exited; the end of its log ($log):" >&2
      tail -20 "$log" >&2
      return 1
    fi
    sleep 0.5
  done
  echo "the UCP Node sample not serving after a minute ($log)" >&2
  return 1
}

ucp_node_stop() {
  local pid=$1
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
}
