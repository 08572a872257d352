#!/usr/bin/env bash
# The hot-path Go benchmarks of issue 7 (testing.B, -benchmem): argument
# validation, pricing, the profile cache hit path, signature verification,
# BR Code encoding, the edge's envelope splice and response serialisation,
# an in-process connect call between co-hosted services (gzip or not), and a
# hit in the per-tenant configuration cache (tenantcache).
# Packages whose TestMain starts PostgreSQL need its binaries
# (scripts/ensure-postgres.sh). Usage: scripts/gobench.sh [-benchtime 1s] [-count 1]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-postgres.sh
exec go test -run '^$' -benchmem "${@:--benchtime=1s}" \
	-bench 'BenchmarkValidateCreateCheckout|BenchmarkQuote|BenchmarkGetCached|BenchmarkNegotiate|BenchmarkVerify|BenchmarkSignES256|BenchmarkEncode|BenchmarkParse|BenchmarkWrap|BenchmarkToolResultMarshal|BenchmarkStartPayment|BenchmarkConnectUnary|BenchmarkGetHit' \
	./protocol/bcpschema ./services/pricing ./services/edge/agentprofile ./httpsig ./protocol/brcode ./services/edge ./services/payments ./internal/inproc ./internal/tenantcache
