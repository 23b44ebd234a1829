// Package tickgroup makes a fleet of identical servers run each periodic task exactly once per period, with
// Kafka as the only coordination service. Every host runs the same program with the same three parts:
//
//   - a Ticker: the replicas join one consumer group; the one that owns partition 0 of the ticker topic leads
//     (with several leaders, the owner of each partition leads the schedules that hash to it). The leader turns
//     schedules (intervals, cron expressions with time zones) into tick records, one per schedule slot, in Kafka
//     transactions that fence any earlier leader, and writes them to the work topic.
//   - a Worker: the workers of a namespace share the work topic's partitions and run each tick through a
//     Handler, recording every start and outcome in the execution ledger, so a tick that finished never runs
//     again and two runs of one tick never overlap.
//   - Schedules: the client that writes the schedules (put, pause, resume, delete, trigger, apply).
//
// Any host can die or freeze: another replica leads within the session timeout, another worker takes the
// partitions, and no slot is lost or emitted twice. A handler runs a tick at least once and, outside a crash or a
// freeze of its worker mid-run, exactly once: when a run was cut off, the tick runs again with Tick.Interrupted
// set, so a handler with external effects should make them idempotent on Tick.ID.
//
// The `ticker` and `worker` commands of this module are these parts behind flags; the README describes the
// topics, the guarantees, the metrics and the operations in full.
//
// # Stability
//
// The API of this package, the record formats on the topics (ticks, cancels, schedules, the ledger) and the
// topic and group names of a namespace are covered by compatibility promises from v1 on: a minor release adds,
// it does not break, and readers ignore fields they do not know. Everything under internal/ can change at any
// time. Until v1, the API may still change between minor releases; the record formats already follow the rule.
package tickgroup

import (
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// KafkaConfig is how to reach the cluster and which namespace to use:
//
//	Brokers    []string    // seed brokers; defaults to localhost:9092
//	Namespace  string      // prefixes every topic and group; defaults to "tickgroup"
//	ClientID   string      // names the clients in broker logs and quotas
//	TLS        TLSConfig   // Enabled, CAFile, CertFile, KeyFile, ServerName, InsecureSkipVerify
//	SASL       SASLConfig  // Mechanism ("plain", "scram-sha-256", "scram-sha-512"), Username, Password, PasswordFile
//
// A SASLConfig prints and logs without its password.
type KafkaConfig = kafka.Config

// TLSConfig enables TLS to the brokers (KafkaConfig.TLS).
type TLSConfig = kafka.TLSConfig

// SASLConfig enables SASL authentication (KafkaConfig.SASL).
type SASLConfig = kafka.SASLConfig

// Schedule is a schedule as stored and as written in apply files: Name, one of Every (with Offset) or Cron (with
// TZ), and optional Jitter, Shards, Payload, Catchup, CatchupMax, Deadline, Overlap, Timeout, MaxAttempts, Start,
// End, Paused and Metrics. The zero value of every optional field is a usable default; Validate explains every
// rule, and ParseSchedules reads a YAML apply file.
type Schedule = schedule.Spec

// Duration is a time.Duration that reads and writes as a Go duration string ("30s") in JSON and YAML, as the
// durations of a Schedule do.
type Duration = schedule.Duration
