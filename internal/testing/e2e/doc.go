// Package e2e holds the end-to-end tests of tickgroup, in one harness: they build the real ticker and worker
// binaries (and the workers' test handler, testdata/handler) once, run them as separate processes against a
// real Kafka broker (kafkatest.Brokers), inject faults (kill -9, SIGSTOP and SIGCONT, SIGTERM, a whole-fleet
// outage, hostile records) and count every slot on the work topic and every execution in the handler's own log.
//
// One fault is inside the ticker: TestTickerLeaderStallGivesWay builds a ticker with -tags tickgroup_fault, in
// which TICKGROUP_TEST_FAULT_HOLD_COMMITS names a file whose existence holds every EndTxn of that replica's
// leader terms (a transaction coordinator that no longer answers it, while its group coordinator does). Only this
// test's build has the hook (internal/dispatch/fault_enabled.go), and it warns on stderr at start; the ticker
// built for every other test, and every release, has none, whatever the environment says.
//
// The fleet (harness_test.go) starts processes and owns them; the worker tests (worker_*_test.go) add an env on
// top of it: a namespace whose ticks they write themselves, as the leader would, and the handler's log.
//
// TICKGROUP_E2E_GROUP_PROTOCOL=consumer runs the fleet under KIP-848's consumer group protocol: the harness gives
// --group-protocol with that value to every `ticker run` and `worker run` of this build it starts (not to another
// build's binaries, nor to the Go API programs). The broker then decides the session timeout and heartbeat
// interval (group.consumer.session.timeout.ms and group.consumer.heartbeat.interval.ms: scripts/kafka-dev.sh sets
// 6 s and 500 ms), so the tests' --session-timeout does not apply; the harness's ticker replicas get their 3 s
// and 250 ms as the ticker group's own config (consumer.session.timeout.ms). Tests that give --instance-id fail
// under it, as the commands refuse static membership there.
package e2e
