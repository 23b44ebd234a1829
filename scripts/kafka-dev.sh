#!/usr/bin/env bash
# kafka-dev.sh: a local, single-node Apache Kafka (KRaft, combined broker+controller) for tests, without Docker.
#
#   scripts/kafka-dev.sh up     resolve the broker jars with Maven (cached), format storage, start, wait until ready
#   scripts/kafka-dev.sh up --secure
#                               the same with security on: see "Secure mode" below
#   scripts/kafka-dev.sh down   stop the broker started by `up` (by its PID file)
#   scripts/kafka-dev.sh restart  stop it and start it again on the same data (a broker restart, for fault tests)
#   scripts/kafka-dev.sh crash  kill -9 it and start it again on the same data (a broker crash, for fault tests)
#   scripts/kafka-dev.sh logs   print the tail of the broker log
#   scripts/kafka-dev.sh pid    print the broker's process ID (tickbench worker --broker-pid)
#
# Settings come from the environment:
#   KAFKA_PORT      client port on 127.0.0.1 (default 9092); the controller listens on KAFKA_PORT+1 (and, in
#                   secure mode, the inter-broker listener on KAFKA_PORT+2)
#   KAFKA_DEV_DIR   working directory for jars, data and logs (default .kafka-dev in the repository)
#   KAFKA_HEAP      JVM heap (default 1g)
#   KAFKA_DEV_PROPERTIES  extra broker properties, one per line, appended to the generated server.properties
#   KAFKA_VERSION   the Apache Kafka release (default 4.1.1; the tests run against it and the newest 4.x: .ci/run);
#                   each version's jars are resolved once, into KAFKA_DEV_DIR/lib-VERSION
#
# Secure mode (`up --secure`) makes the client listener SASL_SSL with SCRAM-SHA-512 and mutual TLS, and turns
# authorization on (StandardAuthorizer, allow.everyone.if.no.acl.found=false), as a production cluster would be:
#   - at start, keytool (it ships with Java) makes a CA, a broker certificate for 127.0.0.1 and localhost and a
#     client certificate, under $run/tls: ca.pem, client.pem and client-key.pem are the files a client needs;
#   - SCRAM-SHA-512 users admin, ticker, worker, operator and auditor are made at format time (kafka-storage format
#     --add-scram), with random passwords in $run/users/NAME.password; admin is a super user;
#   - the controller (KAFKA_PORT+1) and the inter-broker listener (KAFKA_PORT+2) are SSL with mutual TLS; the
#     broker's certificate (User:CN=kafka-broker) is the other super user;
#   - no ACLs are made: deploy/acls.sh (or the tests, from deploy/acls.txt) adds them.
#
# The broker is tuned for tests, not production: replication factor 1 for internal topics, no initial rebalance
# delay, a 1 s minimum session timeout and a 1 s log-cleaner backoff so compaction can be observed quickly.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
port=${KAFKA_PORT:-9092}
cport=$((port + 1))
iport=$((port + 2)) # secure mode's inter-broker listener
root=${KAFKA_DEV_DIR:-$here/.kafka-dev}
heap=${KAFKA_HEAP:-1g}
version=${KAFKA_VERSION:-4.1.1}
lib="$root/lib-$version"
run="$root/run-$port"
pidfile="$run/kafka.pid"
logfile="$run/kafka.log"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

running() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

fetch_jars() {
	if [[ -f $lib/.complete ]]; then return; fi
	echo "kafka-dev: resolving Apache Kafka $version jars with Maven into $lib" >&2
	rm -rf "$lib"
	mkdir -p "$lib"
	mvn -B -q --no-transfer-progress -Dstyle.color=never -f "$here/tools/kafka-dev/pom.xml" -Dkafka.version="$version" \
		org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$lib" >&2 # stdout carries only the bootstrap address
	touch "$lib/.complete"
}

write_config() {
	mkdir -p "$run/data"
	if [[ ${1:-} == secure ]]; then
		listeners_config secure >"$run/server.properties"
	else
		listeners_config >"$run/server.properties"
	fi
	cat >>"$run/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
controller.listener.names=CONTROLLER
log.dirs=$run/data
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# After a kill -9 the node's new incarnation is let in only once the controller has timed out the old one's session
# (broker.session.timeout.ms, 9 s by default). Meanwhile its group coordinator has loaded the groups but takes no
# request, so their members' sessions (6 s in the tests) run out and every group forms anew, at two rebalances' cost.
# 3 s lets the node in before that, with its groups as they were.
broker.session.timeout.ms=3000
broker.heartbeat.interval.ms=500
group.min.session.timeout.ms=1000
# The consumer group protocol (KIP-848, --group-protocol consumer) takes the session timeout and heartbeat interval
# from the broker, 45 s and 5 s by default, whatever the client asks: the tests' 6 s session, as under the classic
# protocol, and a 500 ms heartbeat, by which a member learns of a new assignment (the minimums allow 1 s and 250 ms).
group.consumer.min.session.timeout.ms=1000
group.consumer.session.timeout.ms=6000
group.consumer.min.heartbeat.interval.ms=250
group.consumer.heartbeat.interval.ms=500
log.cleaner.backoff.ms=1000
log.retention.check.interval.ms=5000
PROPS
	# KAFKA_DEV_PROPERTIES: extra broker properties, one per line (a fault test's own broker).
	if [[ -n ${KAFKA_DEV_PROPERTIES:-} ]]; then
		printf '%s\n' "$KAFKA_DEV_PROPERTIES" >>"$run/server.properties"
	fi
	cat >"$run/log4j2.properties" <<PROPS
status=warn
appender.file.type=File
appender.file.name=FILE
appender.file.fileName=$logfile
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=FILE
logger.cleaner.name=kafka.log.LogCleaner
logger.cleaner.level=INFO
PROPS
}

listeners_config() {
	if [[ ${1:-} != secure ]]; then
		cat <<PROPS
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
PROPS
		return
	fi
	local tls=$run/tls sp
	sp=$(cat "$tls/store.password")
	# ssl.client.auth applies to the SSL listeners (controller, inter-broker); a SASL_SSL listener takes only the
	# listener-prefixed setting.
	cat <<PROPS
listeners=SASL_SSL://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,INTERNAL://127.0.0.1:$iport
advertised.listeners=SASL_SSL://127.0.0.1:$port,INTERNAL://127.0.0.1:$iport
inter.broker.listener.name=INTERNAL
listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:SSL,INTERNAL:SSL
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.ssl.client.auth=required
ssl.client.auth=required
ssl.keystore.type=PKCS12
ssl.keystore.location=$tls/broker.p12
ssl.keystore.password=$sp
ssl.key.password=$sp
ssl.truststore.type=PKCS12
ssl.truststore.location=$tls/truststore.p12
ssl.truststore.password=$sp
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:admin;User:CN=kafka-broker
PROPS
}

# make_certs writes a CA, the broker's key store (CN=kafka-broker, SAN 127.0.0.1 and localhost), a trust store
# with the CA, and a client certificate and key as PEM (CN=tickgroup-client), all with keytool. A Java source
# file (run without a build step) writes the client key as PEM, which keytool cannot.
make_certs() {
	local tls=$run/tls
	mkdir -p "$tls"
	chmod 700 "$tls"
	(umask 077 && random_secret >"$tls/store.password")
	KAFKA_DEV_STOREPASS=$(cat "$tls/store.password")
	export KAFKA_DEV_STOREPASS
	kt() { keytool -noprompt -storetype PKCS12 -storepass:env KAFKA_DEV_STOREPASS -keypass:env KAFKA_DEV_STOREPASS "$@" 2>&1; }
	kt -genkeypair -keystore "$tls/ca.p12" -alias ca -keyalg EC -groupname secp256r1 -validity 30 \
		-dname "CN=tickgroup-dev-ca" -ext bc:c >/dev/null
	kt -exportcert -keystore "$tls/ca.p12" -alias ca -rfc -file "$tls/ca.pem" >/dev/null
	kt -importcert -keystore "$tls/truststore.p12" -alias ca -file "$tls/ca.pem" >/dev/null
	local name cn ext
	for name in broker client; do
		if [[ $name == broker ]]; then
			cn=kafka-broker ext=(-ext san=ip:127.0.0.1,dns:localhost -ext eku=serverAuth,clientAuth)
		else
			cn=tickgroup-client ext=(-ext eku=clientAuth)
		fi
		kt -genkeypair -keystore "$tls/$name.p12" -alias "$name" -keyalg EC -groupname secp256r1 -validity 30 \
			-dname "CN=$cn" >/dev/null
		kt -certreq -keystore "$tls/$name.p12" -alias "$name" -file "$tls/$name.csr" >/dev/null
		kt -gencert -keystore "$tls/ca.p12" -alias ca -infile "$tls/$name.csr" -outfile "$tls/$name.pem" -rfc \
			-validity 30 -ext ku=digitalSignature "${ext[@]}" >/dev/null
		kt -importcert -keystore "$tls/$name.p12" -alias ca -file "$tls/ca.pem" >/dev/null
		kt -importcert -keystore "$tls/$name.p12" -alias "$name" -file "$tls/$name.pem" >/dev/null
	done
	(umask 077 && java "$here/tools/kafka-dev/PemKey.java" "$tls/client.p12" client >"$tls/client-key.pem")
	rm -f "$tls"/*.csr
}

random_secret() { head -c 18 /dev/urandom | base64 | tr -d '/+=\n'; }

# scram_args prints the --add-scram arguments of format and writes each user's password to $run/users.
scram_args() {
	mkdir -p "$run/users"
	chmod 700 "$run/users"
	local user pass
	for user in admin ticker worker operator auditor; do
		pass=$(random_secret)
		(umask 077 && printf '%s\n' "$pass" >"$run/users/$user.password")
		printf '%s\n' --add-scram "SCRAM-SHA-512=[name=$user,password=$pass]"
	done
}

up() {
	if running; then
		echo "kafka-dev: already running (pid $(cat "$pidfile")) on 127.0.0.1:$port" >&2
		echo "127.0.0.1:$port"
		return
	fi
	if port_open "$port"; then
		echo "kafka-dev: something else listens on 127.0.0.1:$port; set KAFKA_PORT or KAFKA_BROKERS" >&2
		exit 1
	fi
	command -v java >/dev/null || { echo "kafka-dev: java (17+) is required" >&2; exit 1; }
	command -v mvn >/dev/null || { echo "kafka-dev: mvn is required to resolve the broker jars" >&2; exit 1; }
	local start=$SECONDS
	fetch_jars
	if [[ ${1:-fresh} == fresh ]]; then
		rm -rf "$run"
		mkdir -p "$run"
		local scram=()
		if [[ ${2:-} == secure ]]; then
			command -v keytool >/dev/null || { echo "kafka-dev: keytool (from the JDK) is required for --secure" >&2; exit 1; }
			make_certs
			mapfile -t scram < <(scram_args)
		fi
		write_config "${2:-}"
		local id
		id=$(java -cp "$lib/*" kafka.tools.StorageTool random-uuid 2>/dev/null)
		java "-Dlog4j2.configurationFile=$run/log4j2.properties" -cp "$lib/*" kafka.tools.StorageTool format \
			-t "$id" -c "$run/server.properties" --standalone "${scram[@]}" >"$run/format.log" 2>&1
	fi
	launch "$start"
}

launch() {
	local start=$1
	local cp="$lib/*" log4j="-Dlog4j2.configurationFile=$run/log4j2.properties"
	# A restart keeps the previous log beside the new one; readiness is read from the new one.
	[[ -f $logfile ]] && mv "$logfile" "$logfile.$(date +%s)"
	nohup java -Xms256m -Xmx"$heap" -XX:+UseG1GC "$log4j" -cp "$cp" kafka.Kafka "$run/server.properties" \
		>"$run/stdout.log" 2>&1 </dev/null &
	echo $! >"$pidfile"
	for _ in $(seq 1 240); do
		if ! running; then
			echo "kafka-dev: broker exited during start-up; last lines of $logfile:" >&2
			tail -n 40 "$logfile" "$run/stdout.log" >&2 || true
			exit 1
		fi
		if port_open "$port" && grep -q "Kafka Server started" "$logfile" 2>/dev/null; then
			echo "kafka-dev: Apache Kafka $(ls "$lib" | sed -n 's/^kafka_2.13-\(.*\)\.jar$/\1/p') ready on 127.0.0.1:$port after $((SECONDS - start)) s (pid $(cat "$pidfile"), log $logfile)" >&2
			echo "127.0.0.1:$port"
			return
		fi
		sleep 0.5
	done
	echo "kafka-dev: broker not ready after 120 s; see $logfile" >&2
	exit 1
}

down() {
	if ! running; then
		echo "kafka-dev: not running on port $port" >&2
		rm -f "$pidfile"
		return
	fi
	local pid
	pid=$(cat "$pidfile")
	kill "$pid"
	for _ in $(seq 1 60); do
		kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; echo "kafka-dev: stopped (pid $pid)" >&2; return; }
		sleep 0.5
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$pidfile"
	echo "kafka-dev: killed (pid $pid) after 30 s" >&2
}

case "${1:-}" in
up)
	case "${2:-}" in
	"") up fresh ;;
	--secure) up fresh secure ;;
	*) echo "usage: $0 up [--secure]" >&2; exit 2 ;;
	esac
	;;
down) down ;;
restart)
	down
	up keep
	;;
crash)
	# kill -9, then start again on the same data (what a host or JVM crash leaves: log recovery on start).
	if running; then
		kill -9 "$(cat "$pidfile")" 2>/dev/null || true
		while running; do sleep 0.1; done
		echo "kafka-dev: killed -9 (pid $(cat "$pidfile"))" >&2
		rm -f "$pidfile"
	fi
	up keep
	;;
logs) tail -n "${2:-80}" "$logfile" ;;
pid)
	running || { echo "kafka-dev: not running on port $port" >&2; exit 1; }
	cat "$pidfile"
	;;
*) echo "usage: $0 up [--secure]|down|restart|crash|logs|pid" >&2; exit 2 ;;
esac
