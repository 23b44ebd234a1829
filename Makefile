# tickgroup: run each periodic task exactly once per period across a fleet, with Kafka as the only coordinator.
# `make` (or `make help`) lists the targets.

.DEFAULT_GOAL := help
SHELL := /usr/bin/env bash

GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -s -w -X github.com/tickgroup/tickgroup/internal/admin.Version=$(VERSION)
KAFKA_PORT  ?= 9092
# `make test` starts its own broker on this port when KAFKA_BROKERS is unset, and stops it afterwards.
KAFKA_TEST_PORT ?= 19092
# internal/testing/securetest starts (and stops) its own secure broker on this port; so does `make kafka-up-secure`.
KAFKA_SECURE_PORT ?= 19392
export KAFKA_SECURE_PORT
TEST_TIMEOUT ?= 25m
# Test packages one at a time: the fault tests time failovers against bounds, and on two cores a second package
# killing its own processes at the same moment only adds noise (inside internal/testing/e2e, the tests that only
# count run two at a time, after the timed ones). The whole suite takes about 15 minutes on two cores.
TEST_PARALLEL ?= 1
# `make fuzz` runs each fuzz target (package:Name) this long.
FUZZTIME ?= 30s
FUZZ_TARGETS := internal/tick:FuzzDecode internal/tick:FuzzDecodeCancel internal/leaderstate:FuzzDecodeState internal/command:FuzzSplitArgs \
	internal/schedule:FuzzParseFile internal/schedule:FuzzCompile internal/schedule:FuzzDecodeFast internal/ledger:FuzzDecode internal/store:FuzzApply \
	internal/tick:FuzzDecodeFast internal/ledger:FuzzEncodeIsMarshal internal/ledger:FuzzOutcomeIsMarshal

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/ticker and bin/worker (version-stamped).
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/ticker ./cmd/worker

.PHONY: run
run: ## Start 3 tickers, 2 workers and a demo schedule on the embedded dev broker (no Kafka/Java/Docker); RUN_ARGS=--help.
	@# Built, then exec'd rather than `go run`: go run exits 1 after any Ctrl-C, even when the program stopped cleanly.
	$(GO) build -o .tickgroup-dev/tickgroup-dev ./cmd/tickgroup-dev
	exec .tickgroup-dev/tickgroup-dev $(RUN_ARGS)

.PHONY: test
test: ## Run every test, real-broker ones included (starts and stops a local Kafka when KAFKA_BROKERS is unset).
	@scripts/with-kafka.sh $(GO) test -count=1 -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) ./...

.PHONY: test-short
test-short: ## Run the fast tests only (no broker needed).
	$(GO) test -short -count=1 ./...

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (30s); not part of `make test` (which runs their seed corpora).
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*} name=$${t##*:}; \
		echo "fuzz: $$name in ./$$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) ./$$pkg; \
	done

.PHONY: bench
bench: ## Run the Go benchmarks and the load tool against a real broker (started if needed).
	@scripts/with-kafka.sh scripts/bench.sh

GOLANGCI_LINT_VERSION ?= v2.15.0

.PHONY: lint
lint: ## gofmt, go vet and golangci-lint (.golangci.yml; built from the module proxy on first use).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run ./...

.PHONY: kafka-up
kafka-up: ## Start a local Apache Kafka 4.x (Java 17 + Maven) on 127.0.0.1:$(KAFKA_PORT).
	@KAFKA_PORT=$(KAFKA_PORT) scripts/kafka-dev.sh up

.PHONY: kafka-up-secure
kafka-up-secure: ## Start a local Kafka with SASL_SSL, mutual TLS and ACLs on 127.0.0.1:$(KAFKA_SECURE_PORT).
	@KAFKA_PORT=$(KAFKA_SECURE_PORT) scripts/kafka-dev.sh up --secure

.PHONY: kafka-down
kafka-down: ## Stop the local Apache Kafka started by kafka-up.
	@KAFKA_PORT=$(KAFKA_PORT) scripts/kafka-dev.sh down

.PHONY: clean
clean: ## Remove build output and the local broker's data (keeps the downloaded jars).
	rm -rf bin .kafka-dev/run-* .tickgroup-dev
