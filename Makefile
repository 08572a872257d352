# The two commands the README promises: `make run` and `make test`.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DELETE_ON_ERROR:
MAKEFLAGS += --no-builtin-rules

GO       ?= go
DATA_DIR ?= .bcp
SQLC     := $(GO) tool -modfile=tools/sqlc/go.mod sqlc
BUF      := $(GO) tool -modfile=tools/buf/go.mod buf
LINT     := $(GO) tool -modfile=tools/golangci-lint/go.mod golangci-lint

.PHONY: ha run test generate check-generate build vet lint fuzz fuzz-short bench bench-long bench-ab bench-peer bench-search scale chaos chaos-short chaos-ha chaos-ha-short
.DEFAULT_GOAL := test

## run: start the whole platform on a private PostgreSQL with a demo merchant, listening on
## 127.0.0.1: PUBLIC_PORT (agents, browsers), INTERNAL_PORT (operator API, bcpctl), WEBHOOK_PORT
## (PSP webhooks, mTLS), PSPSIM_PIX_PORT and PSPSIM_CONTROL_PORT (the PSP simulator); set them on
## the command line or in the environment (make run PUBLIC_PORT=8180 INTERNAL_PORT=9190)
PUBLIC_PORT         ?= 8080
INTERNAL_PORT       ?= 9090
WEBHOOK_PORT        ?= 8443
PSPSIM_PIX_PORT     ?= 9443
PSPSIM_CONTROL_PORT ?= 9444
run:
	@scripts/ensure-postgres.sh
	@echo "make run: building bin/bcpd and bin/bcpctl; the first build compiles every dependency (a few minutes), listing each package as it goes" >&2
	$(GO) build -v -o bin/bcpd ./cmd/bcpd
	$(GO) build -v -o bin/bcpctl ./cmd/bcpctl
	./bin/bcpd dev --data-dir $(DATA_DIR) --public-addr 127.0.0.1:$(PUBLIC_PORT) --internal-addr 127.0.0.1:$(INTERNAL_PORT) \
		--webhook-addr 127.0.0.1:$(WEBHOOK_PORT) --pspsim-pix-addr 127.0.0.1:$(PSPSIM_PIX_PORT) \
		--pspsim-control-addr 127.0.0.1:$(PSPSIM_CONTROL_PORT)

## ha: a local high-availability formation (pg_auto_failover monitor, primary and synchronous
## standby on ports 6000-6002) with one bcpd per role on its multi-host URL (two edges on 8080 and
## 8081 with PSP webhook listeners on 8443 and 8444, two checkouts), the PSP simulator (bcpd pspsim,
## 9443-9444) the payments process pays sandbox handlers through, and the demo merchant; Ctrl-C
## stops it (HA_DIR=.bcp/ha keeps its state; deploy/README.md, "Database", explains it and the
## production setup)
ha:
	@scripts/ensure-postgres.sh
	scripts/ha.sh

## test: generated-code check, vet, lint, every test (each package starts its own PostgreSQL, the e2e
## package includes the short fault-injection run and platform/chaos the short failover run, which
## needs pg_autoctl; BCP_CHAOS=0 skips both), a short fuzz run
BCP_CHAOS ?= 1
test: check-generate vet lint
	@scripts/ensure-postgres.sh
	BCP_CHAOS=$(BCP_CHAOS) $(GO) test -count=1 -timeout 20m ./...
	@$(MAKE) --no-print-directory fuzz-short

## fuzz: the parsers agents and PSPs reach (FUZZTIME=10m for a long run)
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzValidateToolInput$$' -fuzztime=$(FUZZTIME) ./protocol/bcpschema/
	$(GO) test -run='^$$' -fuzz='^FuzzValidateCatalogToolInput$$' -fuzztime=$(FUZZTIME) ./protocol/bcpschema/
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./protocol/brcode/
	$(GO) test -run='^$$' -fuzz='^FuzzParseSignatureInput$$' -fuzztime=$(FUZZTIME) ./httpsig/
	$(GO) test -run='^$$' -fuzz='^FuzzMembers$$' -fuzztime=$(FUZZTIME) ./internal/jsonmembers/
	$(GO) test -run='^$$' -fuzz='^FuzzMandate$$' -fuzztime=$(FUZZTIME) ./protocol/ap2/
	$(GO) test -run='^$$' -fuzz='^FuzzToolArguments$$' -fuzztime=$(FUZZTIME) ./services/edge/
	$(GO) test -run='^$$' -fuzz='^FuzzMCPMessage$$' -fuzztime=$(FUZZTIME) ./services/edge/

## fuzz-short: the test run's few seconds of each, counted in executions: a duration can end a
## run with a spurious "context deadline exceeded" on a loaded machine (golang/go#75804, fixed in
## Go 1.27), a count has no deadline
fuzz-short:
	$(GO) test -run='^$$' -fuzz='^FuzzValidateToolInput$$' -fuzztime=5000x ./protocol/bcpschema/
	$(GO) test -run='^$$' -fuzz='^FuzzValidateCatalogToolInput$$' -fuzztime=5000x ./protocol/bcpschema/
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=40000x ./protocol/brcode/
	$(GO) test -run='^$$' -fuzz='^FuzzParseSignatureInput$$' -fuzztime=40000x ./httpsig/
	$(GO) test -run='^$$' -fuzz='^FuzzMembers$$' -fuzztime=40000x ./internal/jsonmembers/
	$(GO) test -run='^$$' -fuzz='^FuzzMandate$$' -fuzztime=5000x ./protocol/ap2/
	$(GO) test -run='^$$' -fuzz='^FuzzToolArguments$$' -fuzztime=2000x ./services/edge/
	$(GO) test -run='^$$' -fuzz='^FuzzMCPMessage$$' -fuzztime=5000x ./services/edge/

## build: the two binaries into bin/
build:
	$(GO) build -o bin/bcpd ./cmd/bcpd
	$(GO) build -o bin/bcpctl ./cmd/bcpctl

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt needed: $$out" >&2; exit 1; fi
	$(GO) vet ./...

## lint: golangci-lint at its pinned version, the linters and why in .golangci.yml (a few minutes
## the first time, its cache makes later runs quick)
lint:
	$(LINT) run ./...

## generate: protobuf/connect (buf, local plugins) and sqlc, all through `go tool` at pinned versions
generate:
	$(BUF) lint
	$(BUF) generate
	$(SQLC) generate

## check-generate: fail when generated code is stale
check-generate:
	@scripts/check-generate.sh

## bench: a short load run (about 2 minutes) as a user runs the platform: a separate `bcpd dev` (its own
## durable PostgreSQL, listeners at BENCH_PORT_BASE=28000+) driven over loopback HTTP by `bcpbench` in
## another process: create_checkout, whole purchases (closed loop), then an open-loop sweep; CPU of bcpd and
## its PostgreSQL from /proc (the load generator's apart; the PSP simulator runs in a process of its own,
## `bcpbench pspsim`, and is not counted); prints the table, writes JSON and SVG to $(BENCH_OUT).
## Agents speak MCP; over the REST binding: make bench BENCH_FLAGS="--tenants 20 --duration 5s --concurrency 16 --protocol rest".
## The platform in the load generator's process: go run ./cmd/bcpbench. Go micro-benchmarks: scripts/gobench.sh.
## Figures: docs/performance.md.
BENCH_OUT   ?= $(DATA_DIR)/bench
BENCH_FLAGS ?= --tenants 20 --duration 5s --concurrency 16
bench:
	@scripts/ensure-postgres.sh
	@mkdir -p $(BENCH_OUT)
	scripts/bench.sh $(BENCH_OUT) $(BENCH_FLAGS) --out $(BENCH_OUT)/result.json --svg $(BENCH_OUT)/latency.svg

## bench-long: the same with 25 s phases (about 4 minutes): the p99 at 60 % of the peak then rests on
## the 2 000 calls issue 23 asks for (at a peak above 133 purchases/s) instead of 500, so one
## autovacuum pass no longer decides it. The p99 target's measurement of record.
bench-long:
	@$(MAKE) --no-print-directory bench BENCH_FLAGS="--tenants 20 --duration 25s --concurrency 16"

## bench-ab: two revisions' `bcpd dev`, each a separate process with its durable PostgreSQL, driven from
## outside at the same time, so both see the same machine (whole runs drift ±20 % between minutes here);
## prints each round's rates, CPU per card purchase (bcpd + PostgreSQL) and complete_checkout p50, and B/A.
## Run several rounds. make bench-ab AB="6de9e8d HEAD" [AB_ROUNDS=3] [AB_FLAGS="--concurrency 1"]
## [AB_ENV_B="OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:27318 OTEL_TRACES_SAMPLER_ARG=0.01"] (one side's bcpd environment)
AB        ?= HEAD~1 HEAD
AB_ROUNDS ?= 3
AB_FLAGS  ?=
bench-ab:
	@scripts/ensure-postgres.sh
	@AB_ENV_A='$(AB_ENV_A)' AB_ENV_B='$(AB_ENV_B)' scripts/bench-ab.sh $(AB) $(AB_ROUNDS) $(AB_FLAGS)

## bench-peer: the platform against the UCP Node.js sample server (github.com/Universal-Commerce-Protocol/
## samples rest/nodejs at a pinned commit, set up by scripts/ucp-node-sample.sh: git clone + npm ci into
## .bcp/ucp-samples on the first run, a few minutes). A `bcpd dev` and the sample run side by side; bcpbench
## drives each in turn from outside with the same REST purchase (create with the address → update with the
## option and a code → complete with a card token → get the order) and prints, per round, each one's rates,
## CPU per purchase from /proc (bcpd + its PostgreSQL; the Node process) and node/bcpd. By hand only: needs
## node, npm and the registry; not in make test. make bench-peer [PEER_ROUNDS=3] [PEER_FLAGS="--concurrency 1"]
PEER_ROUNDS ?= 3
PEER_FLAGS  ?=
bench-peer:
	@scripts/ensure-postgres.sh
	@scripts/bench-peer.sh $(PEER_ROUNDS) $(PEER_FLAGS)

## bench-search: search_catalog at a real catalog's size (issue 25): 100 merchants × 10 000 products
## (1M, seeded set-based through the catalog schema as the application role), EXPLAIN ANALYZE of every
## search filter combination on it, then get_checkout and search_catalog at 50/s (open loop) and a
## closed-loop search peak; durable PostgreSQL; 5–6 minutes on 2 cores, 2 of them the seed.
## Prints the table, writes $(BENCH_OUT)/search.json. Figures: docs/performance.md, "Catalog search at 1M products".
SEARCH_FLAGS ?= --tenants 100 --products 10000 --rate 50 --duration 30s
bench-search:
	@scripts/ensure-postgres.sh
	@mkdir -p $(BENCH_OUT)
	$(GO) run ./cmd/bcpbench search $(SEARCH_FLAGS) --out $(BENCH_OUT)/search.json

## scale: memory and latency of one `bcpd all` at 10 000 merchants vs 10 (onboarded through the operator
## APIs; ≈ 2–3 minutes on 2 cores); prints the table and writes $(BENCH_OUT)/scale.json.
## SCALE_FLAGS="--tenants 10000 --paired" measures the two side by side in time (two processes).
SCALE_FLAGS ?= --tenants 10000
scale:
	@scripts/ensure-postgres.sh
	@mkdir -p $(BENCH_OUT)
	$(GO) run ./cmd/bcpbench scale $(SCALE_FLAGS) --out $(BENCH_OUT)/scale.json

## chaos: fault injection (about 5–6 minutes): SIGKILLs of bcpd, PostgreSQL restarts and webhook
## receiver failures under sustained purchases paid through the wire clients at the PSP simulator (a
## bcpd pspsim process, never killed, its HTTP faults on: 503s, latency, resets after applied writes,
## dropped/duplicated/late webhooks; 5 % of Pix paid the wrong amount), then SQL/MCP invariant checks
## and the faults injected by kind; exits 1 on a violation. CHAOS_FLAGS="--seed N" replays a
## schedule, "--psp-faults SPEC" sets the faults. Results: docs/performance.md, "Fault injection".
CHAOS_FLAGS ?=
chaos:
	@scripts/ensure-postgres.sh
	$(GO) build -o bin/bcpd ./cmd/bcpd
	$(GO) run ./cmd/bcpchaos --bcpd bin/bcpd $(CHAOS_FLAGS)

## chaos-short: the CI form (3 kills, 1 PostgreSQL restart, the PSP faults at about twice the shares,
## recovery jobs fast-forwarded; about a minute)
chaos-short:
	@scripts/ensure-postgres.sh
	$(GO) build -o bin/bcpd ./cmd/bcpd
	$(GO) run ./cmd/bcpchaos --short --bcpd bin/bcpd $(CHAOS_FLAGS)

## chaos-ha: the failover run (6-10 minutes on 2 cores): one bcpd per role (two edges, two checkouts) and
## bcpd pspsim (with make chaos's PSP faults) on a pg_auto_failover formation; 4 primary failovers
## (each failing back; the 1st and 3rd lose the primary's host: its postmaster and pg_autoctl keeper
## SIGKILLed together, the others its PostgreSQL alone) and 12 service-process SIGKILLs under
## purchases over both edges, then the chaos invariants and the failover checks (first success on
## the new primary ≤ 15 s after each kill, every answer meanwhile within the request deadline, a
## suspension reaching both edges, the standby holding what the primary holds). Needs pg_autoctl (postgresql-15-auto-failover,
## pg-auto-failover-cli). Results: docs/performance.md, "Failover under load".
chaos-ha:
	@scripts/ensure-postgres.sh
	$(GO) build -o bin/bcpd ./cmd/bcpd
	$(GO) run ./cmd/bcpchaos --ha --bcpd bin/bcpd $(CHAOS_FLAGS)

## chaos-ha-short: its CI form (2 failovers: a lost host, then a PostgreSQL crash; a kill of each
## role, recovery jobs fast-forwarded; about 1½-2½ minutes; also BCP_CHAOS=1 go test ./platform/chaos -run TestChaosHAShort, which make test runs)
chaos-ha-short:
	@scripts/ensure-postgres.sh
	$(GO) build -o bin/bcpd ./cmd/bcpd
	$(GO) run ./cmd/bcpchaos --ha --short --bcpd bin/bcpd $(CHAOS_FLAGS)
