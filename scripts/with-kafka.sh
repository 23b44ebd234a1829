#!/usr/bin/env bash
# with-kafka.sh CMD...: run CMD with KAFKA_BROKERS pointing at a real Kafka broker.
#
#   - KAFKA_BROKERS already set: use it as it is.
#   - else Java and Maven present: start the project's local Apache Kafka on KAFKA_TEST_PORT (default 19092) and
#     stop it afterwards (unless it was already running, in which case it is reused and left running).
#   - else: run CMD as it is; the tests then use testcontainers when Docker answers, and skip the real-broker
#     tests otherwise (under CI=true they fail instead).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

if [[ -n ${KAFKA_BROKERS:-} ]]; then
	echo "with-kafka: using KAFKA_BROKERS=$KAFKA_BROKERS" >&2
	exec "$@"
fi
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
	echo "with-kafka: no KAFKA_BROKERS and no Java+Maven; tests use testcontainers if Docker answers" >&2
	exec "$@"
fi

export KAFKA_PORT=${KAFKA_TEST_PORT:-19092}
started=0
if ! [[ -f $here/.kafka-dev/run-$KAFKA_PORT/kafka.pid ]] || ! kill -0 "$(cat "$here/.kafka-dev/run-$KAFKA_PORT/kafka.pid")" 2>/dev/null; then
	started=1
fi
KAFKA_BROKERS=$("$here/scripts/kafka-dev.sh" up)
export KAFKA_BROKERS
if ((started)); then
	trap '"$here/scripts/kafka-dev.sh" down' EXIT
fi
status=0
"$@" || status=$?
if ((status != 0)); then
	echo "with-kafka: command failed ($status); last broker log lines:" >&2
	"$here/scripts/kafka-dev.sh" logs 40 >&2 || true
fi
exit $status
