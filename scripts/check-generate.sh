#!/usr/bin/env bash
# Fails when generated code (protobuf/connect, sqlc) differs from what the
# sources in the tree produce. It snapshots the generated folders,
# regenerates, and compares; the regenerated code stays in place.
set -euo pipefail
cd "$(dirname "$0")/.."
dirs="proto/gen $(awk '/^[[:space:]]+out:/ {print $2}' sqlc.yaml)"
snap=$(mktemp -d)
trap 'rm -rf "$snap"' EXIT
for d in $dirs; do
  mkdir -p "$snap/$d"
  if [ -d "$d" ]; then cp -a "$d/." "$snap/$d/"; fi
done
make --no-print-directory generate >/dev/null
stale=0
for d in $dirs; do
  if ! diff -r "$snap/$d" "$d" >/dev/null; then
    echo "check-generate: $d is stale (regenerated now; commit the result)" >&2
    diff -r "$snap/$d" "$d" | head -20 >&2 || true
    stale=1
  fi
done
exit $stale
