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
//
// # Durations
//
// Every duration of TickerConfig and WorkerConfig follows one rule: zero takes the default documented on the
// field, and a negative value means none (no lead, no grace, no timeout) where a field can be none; where it
// cannot (a session timeout, a lease, a backoff), a negative value is an error. The durations of a Schedule are
// part of its record format and keep theirs: zero is the default there too, and none of them may be negative.
//
// # Lifecycle
//
// NewTicker and NewWorker check their config and open nothing. Run opens the part's Kafka clients and registers
// its metrics, runs until its context ends, and closes and unregisters them before it returns: nil after a clean
// stop, an error wrapping ErrInstanceFenced when another process took the part's InstanceID, otherwise what
// stopped it. A part can Run again once Run has returned. NewSchedules opens a client: Close it. A ticker and a
// worker in one program share one *slog.Logger and one prometheus.Registerer.
//
// # Handler failures and panics
//
// A Handler's error fails the attempt: it is retried with backoff, then dead-lettered, unless marked Permanent. A
// panic in a Handler fails the attempt the same way (see Handler and PanicError); it does not end the worker.
// Package tickgrouptest runs a Handler in a unit test, without a broker.
package tickgroup

import (
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// KafkaConfig is how to reach the cluster and which namespace to use.
type KafkaConfig struct {
	// Brokers are the seed brokers. Defaults to localhost:9092.
	Brokers []string
	// Namespace prefixes every topic and group (<ns>.ticker, <ns>.work, ...). Defaults to "tickgroup".
	Namespace string
	// ClientID names the clients in broker logs and quotas. Defaults to "tickgroup"; a Ticker sets its own
	// (tickgroup-ticker-<instance>).
	ClientID string
	// TLS enables TLS to the brokers. Off by default.
	TLS TLSConfig
	// SASL enables SASL authentication. Off by default.
	SASL SASLConfig
}

// TLSConfig enables TLS to the brokers (KafkaConfig.TLS). Setting CAFile or CertFile enables it too.
type TLSConfig struct {
	// Enabled turns TLS on. Defaults to false.
	Enabled bool
	// CAFile is a PEM bundle of the CAs to trust. Defaults to the system pool.
	CAFile string
	// CertFile and KeyFile are the client certificate for mutual TLS, both or neither. Default to none.
	CertFile, KeyFile string
	// ServerName overrides the name checked in the broker's certificate. Defaults to the broker's host.
	ServerName string
	// InsecureSkipVerify disables certificate verification (testing only). Defaults to false.
	InsecureSkipVerify bool
}

// SASLConfig enables SASL authentication (KafkaConfig.SASL). It prints (String, and every fmt verb through
// Format), logs (LogValue) and marshals to JSON without its password.
type SASLConfig struct {
	// Mechanism is "plain", "scram-sha-256" or "scram-sha-512". Defaults to "", no SASL.
	Mechanism string
	// Username and Password are the credentials; a Mechanism needs a Username.
	Username, Password string
	// PasswordFile names a file holding the password (a trailing newline is dropped), so that the secret is in
	// neither the command line nor the environment. KafkaConfig.ReadPasswordFile reads it, once at start;
	// giving both Password and PasswordFile is an error. Defaults to none.
	PasswordFile string
}

// String shows the settings without the password, so that printing a KafkaConfig never leaks it.
func (s SASLConfig) String() string { return s.internal().String() }

// GoString is String for %#v: the settings in Go syntax, the password redacted.
func (s SASLConfig) GoString() string {
	r := s.redacted()
	return fmt.Sprintf("tickgroup.SASLConfig{Mechanism:%q, Username:%q, Password:%q, PasswordFile:%q}", r.Mechanism, r.Username, r.Password,
		r.PasswordFile)
}

// Format prints s without its password for every verb: %#v as GoString, any other as String (a verb such as
// %d would otherwise print the fields one by one, the password with them).
func (s SASLConfig) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, s.GoString())
		return
	}
	fmt.Fprint(f, s.String())
}

// LogValue is String for slog.
func (s SASLConfig) LogValue() slog.Value { return s.internal().LogValue() }

// MarshalJSON is String for encoding/json (slog's JSON handler marshals a KafkaConfig that way).
func (s SASLConfig) MarshalJSON() ([]byte, error) { return s.internal().MarshalJSON() }

// redacted is s with the password replaced, as String shows it.
func (s SASLConfig) redacted() SASLConfig {
	if s.Password != "" {
		s.Password = "REDACTED"
	}
	return s
}

// Validate reports the first problem with k: an empty broker address, a namespace with characters no topic name
// takes, an unknown SASL mechanism, a SASL mechanism without a username, both a password and a password file,
// or a client certificate without its key.
func (k KafkaConfig) Validate() error { return k.internal().Validate() }

// ClientOptions returns the franz-go options of k's connections (seed brokers, TLS, SASL, client ID) as this
// package's own clients use them: for a program that reads the namespace's topics with a client of its own, or
// mounts the web console (package console).
func (k KafkaConfig) ClientOptions() ([]kgo.Opt, error) { return k.internal().Opts(nil) }

// ReadPasswordFile loads SASL.PasswordFile, if set, into SASL.Password and clears PasswordFile. The clients of
// this package use SASL.Password only: a program that takes a password file calls it once, at start.
func (k *KafkaConfig) ReadPasswordFile() error {
	c := k.internal()
	if err := c.ReadPasswordFile(); err != nil {
		return err
	}
	*k = fromKafka(c)
	return nil
}

// internal is k as the internal packages take it.
func (k KafkaConfig) internal() kafka.Config {
	return kafka.Config{Brokers: k.Brokers, Namespace: k.Namespace, ClientID: k.ClientID, TLS: kafka.TLSConfig(k.TLS), SASL: k.SASL.internal()}
}

// fromKafka is the KafkaConfig of c.
func fromKafka(c kafka.Config) KafkaConfig {
	return KafkaConfig{Brokers: c.Brokers, Namespace: c.Namespace, ClientID: c.ClientID, TLS: TLSConfig(c.TLS), SASL: SASLConfig(c.SASL)}
}

// internal is s as package kafka takes it. The conversion compiles only while both have the same fields.
func (s SASLConfig) internal() kafka.SASLConfig { return kafka.SASLConfig(s) }
