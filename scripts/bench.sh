#!/usr/bin/env bash
# bench.sh: the benchmarks behind docs/benchmarks.md, in one run against the broker in KAFKA_BROKERS
# (make bench starts a local Apache Kafka when it is unset).
#   1. Go benchmarks without a broker: the leader's emission loop, schedule planning, the worker's hot path.
#   2. tickbench emit: 100,000 schedules on one slot, one real ticker; emission lag, leader memory, and the
#      leader's throughput against raw transactional produce measured in the same run.
#   3. tickbench worker: 200,000 ticks; the worker library (a no-op handler at the default concurrency and at
#      1,024, then forward mode) against raw franz-go consumption, same run; with the local broker's CPU per tick
#      when it is the one scripts/kafka-dev.sh runs on KAFKA_PORT.
# BENCH_SCHEDULES, BENCH_TICKS scale the load runs.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KAFKA_BROKERS:?KAFKA_BROKERS must point at a real broker (make bench sets it)}"

echo "== Go benchmarks (no broker) =="
go test -run '^$' -bench . -benchmem -benchtime 2s ./internal/dispatch/ ./internal/schedule/ ./internal/worker/ ./internal/command/ ./internal/tick/ ./internal/ledger/

go build -o bin/tickbench ./cmd/tickbench
go build -o bin/ticker ./cmd/ticker
echo
echo "== Leader: ${BENCH_SCHEDULES:-100000} schedules (tickbench emit) =="
bin/tickbench emit --brokers "$KAFKA_BROKERS" --ticker bin/ticker --schedules "${BENCH_SCHEDULES:-100000}" --every 20s --rounds 2
broker=()
if [[ $KAFKA_BROKERS == "127.0.0.1:${KAFKA_PORT:-9092}" ]] && pid=$(scripts/kafka-dev.sh pid 2>/dev/null); then
	broker=(--broker-pid "$pid")
fi
echo
echo "== Worker: ${BENCH_TICKS:-200000} ticks (tickbench worker) =="
bin/tickbench worker --brokers "$KAFKA_BROKERS" --ticks "${BENCH_TICKS:-200000}" "${broker[@]}"
echo
echo "== Worker, concurrency 1,024: ${BENCH_TICKS:-200000} ticks (tickbench worker --concurrency 1024) =="
bin/tickbench worker --brokers "$KAFKA_BROKERS" --ticks "${BENCH_TICKS:-200000}" --concurrency 1024 "${broker[@]}"
echo
echo "== Worker, forward mode: ${BENCH_TICKS:-200000} ticks (tickbench worker --forward) =="
bin/tickbench worker --brokers "$KAFKA_BROKERS" --ticks "${BENCH_TICKS:-200000}" --forward "${broker[@]}"
