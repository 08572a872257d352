#!/usr/bin/env bash
# Makes sure the PostgreSQL server binaries (initdb, postgres) exist: the
# private clusters of `bcpd dev` and of the tests are started from them.
# As root it installs Debian's package; otherwise it prints the command.
set -euo pipefail
if command -v initdb >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "PostgreSQL server binaries missing; installing them (apt-get install -y postgresql)..." >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  exit 0
fi
echo "PostgreSQL server binaries (initdb, postgres) are missing. Install them with:" >&2
echo "    sudo apt-get install -y postgresql" >&2
exit 1
