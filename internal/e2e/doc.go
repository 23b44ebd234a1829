// Package e2e holds the end-to-end tests of tickgroup: they build the real ticker and worker binaries once, run
// them as separate processes against a real Kafka broker (kafkatest.Brokers), inject faults (kill -9, SIGSTOP
// and SIGCONT, SIGTERM, a whole-fleet outage) and count every tick slot on the work topic, read_committed.
package e2e
