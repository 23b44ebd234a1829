// Package kafka holds everything tickgroup asks of Kafka in one place: the connection options of every client
// (brokers, TLS, SASL, logging), the names of the namespace's topics and groups, and their creation and checks.
package kafka

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/twmb/franz-go/plugin/kslog"
)

// Config is how to reach the cluster and which namespace to use.
type Config struct {
	// Brokers are the seed brokers. Defaults to localhost:9092.
	Brokers []string
	// Namespace prefixes every topic and group. Defaults to "tickgroup".
	Namespace string
	// ClientID names the client in broker logs and quotas. Defaults to "tickgroup".
	ClientID string

	TLS  TLSConfig
	SASL SASLConfig
}

// TLSConfig enables TLS to the brokers.
type TLSConfig struct {
	Enabled bool
	// CAFile is a PEM bundle of the CAs to trust; the system pool when empty.
	CAFile string
	// CertFile and KeyFile are the client certificate for mutual TLS.
	CertFile, KeyFile string
	// ServerName overrides the name checked in the broker's certificate.
	ServerName string
	// InsecureSkipVerify disables certificate verification (testing only).
	InsecureSkipVerify bool
}

// SASLConfig enables SASL authentication.
type SASLConfig struct {
	// Mechanism is "", "plain", "scram-sha-256" or "scram-sha-512".
	Mechanism          string
	Username, Password string
	// PasswordFile names a file holding the password (a trailing newline is dropped), so that the secret is in
	// neither the command line nor the environment, where ps and child processes could see it. It is read by
	// ReadPasswordFile, once at start; giving both Password and PasswordFile is an error.
	PasswordFile string
}

// String shows the settings without the password, so that printing a Config (%v, %+v) never leaks it.
func (s SASLConfig) String() string {
	return fmt.Sprintf("{Mechanism:%s Username:%s Password:%s PasswordFile:%s}", s.Mechanism, s.Username, redacted(s.Password), s.PasswordFile)
}

// GoString is String for %#v: the settings in Go syntax, the password redacted.
func (s SASLConfig) GoString() string {
	return fmt.Sprintf("kafka.SASLConfig{Mechanism:%q, Username:%q, Password:%q, PasswordFile:%q}", s.Mechanism, s.Username, redacted(s.Password),
		s.PasswordFile)
}

// Format prints s without its password for every verb: %#v as GoString, any other as String (without it, %#v
// and a verb such as %d would print the fields one by one, the password with them).
func (s SASLConfig) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, s.GoString())
		return
	}
	fmt.Fprint(f, s.String())
}

// LogValue is String for slog.
func (s SASLConfig) LogValue() slog.Value {
	return slog.GroupValue(slog.String("mechanism", s.Mechanism), slog.String("username", s.Username),
		slog.String("password", redacted(s.Password)), slog.String("password_file", s.PasswordFile))
}

// MarshalJSON is String for encoding/json (slog's JSON handler marshals a Config that way).
func (s SASLConfig) MarshalJSON() ([]byte, error) {
	type plain SASLConfig // without the methods
	s.Password = redacted(s.Password)
	return json.Marshal(plain(s))
}

func redacted(secret string) string {
	if secret == "" {
		return ""
	}
	return "REDACTED"
}

// ReadPasswordFile loads SASL.PasswordFile, if set, into SASL.Password and clears PasswordFile.
func (c *Config) ReadPasswordFile() error {
	if c.SASL.PasswordFile == "" {
		return nil
	}
	if c.SASL.Password != "" {
		return errSASLPasswordTwice
	}
	b, err := os.ReadFile(c.SASL.PasswordFile)
	if err != nil {
		// The error names the file, never its content.
		return fmt.Errorf("sasl: reading password file: %w", err)
	}
	pass := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pass == "" {
		return fmt.Errorf("sasl: password file %s is empty", c.SASL.PasswordFile)
	}
	c.SASL.Password, c.SASL.PasswordFile = pass, ""
	return nil
}

var errSASLPasswordTwice = errors.New("sasl: a password and a password file are mutually exclusive")

// DefaultNamespace is the namespace when none is configured.
const DefaultNamespace = "tickgroup"

func (c Config) namespace() string {
	if c.Namespace == "" {
		return DefaultNamespace
	}
	return c.Namespace
}

// Names are the topics and groups of one namespace. Work, Results, DLQ and WorkerGroup are those of one worker
// pool: the default pool's (Config.Names), or another's (Names.Pool).
type Names struct {
	// Namespace is the namespace's name; PoolName the pool of Work, Results, DLQ and WorkerGroup ("": the
	// default).
	Namespace, PoolName                   string
	Ticker, Schedules, Work, Results, DLQ string
	// Clock is where every ticker and worker writes a small record to read the broker's clock (package clock).
	Clock string
	// Changes is the change log: who changed which schedule, when and why (package changelog).
	Changes string
	// Backfills holds the backfill requests and cancellations (written by operators); BackfillProgress their
	// progress, written by the leaders alone, in their transactions (package backfill).
	Backfills, BackfillProgress string
	// Limits holds the named limits (package limit), written by operators and followed by the workers.
	Limits string
	// Calendars holds the named calendars of excluded days (package calendarstore), written by operators; the
	// schedules that exclude them are checked against it when written.
	Calendars string
	// Shares is the schedules topic split along the leaders (package shares): one partition per leader, a copy
	// of the schedules topic that leader 0 keeps, so that a replica reads only the schedules it leads.
	Shares                   string
	TickerGroup, WorkerGroup string
	// TransactionalID is shared by every ticker replica: a new leader's InitProducerID fences the old one.
	TransactionalID string
}

// Names returns the topics and groups of c's namespace.
func (c Config) Names() Names {
	ns := c.namespace()
	return Names{
		Namespace:        ns,
		Ticker:           ns + ".ticker",
		Schedules:        ns + ".schedules",
		Work:             ns + ".work",
		Results:          ns + ".results",
		DLQ:              ns + ".dlq",
		Clock:            ns + ".clock",
		Changes:          ns + ".changes",
		Backfills:        ns + ".backfills",
		BackfillProgress: ns + ".backfills.progress",
		Limits:           ns + ".limits",
		Calendars:        ns + ".calendars",
		Shares:           ns + ".schedules.shares",
		TickerGroup:      ns + ".ticker",
		WorkerGroup:      ns + ".workers",
		TransactionalID:  ns + ".ticker",
	}
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	for _, b := range c.Brokers {
		if strings.TrimSpace(b) == "" {
			return errors.New("brokers: empty address in list")
		}
	}
	ns := c.namespace()
	for _, r := range ns {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("namespace %q: only letters, digits, '.', '_' and '-' are allowed", ns)
		}
	}
	if len(ns) > 200 {
		return fmt.Errorf("namespace %q: longer than 200 characters", ns)
	}
	switch strings.ToLower(c.SASL.Mechanism) {
	case "", "plain", "scram-sha-256", "scram-sha-512":
	default:
		return fmt.Errorf("sasl mechanism %q: want plain, scram-sha-256 or scram-sha-512", c.SASL.Mechanism)
	}
	if c.SASL.Password != "" && c.SASL.PasswordFile != "" {
		return errSASLPasswordTwice
	}
	if c.SASL.Mechanism != "" && c.SASL.Username == "" {
		return errors.New("sasl: a username is required")
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return errors.New("tls: a client certificate needs both a certificate and a key file")
	}
	return nil
}

// plainWarning makes the PLAIN-without-TLS warning once per process.
var plainWarning sync.Once

// Opts returns the connection options shared by every client: seeds, client ID, TLS, SASL and logging through
// logger (franz-go's own lines at warn and above, all of them when logger is at debug; see clientLogger). Role-specific options (groups, transactions, isolation) are added by the caller.
func (c Config) Opts(logger *slog.Logger) ([]kgo.Opt, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	brokers := c.Brokers
	if len(brokers) == 0 {
		brokers = []string{"localhost:9092"}
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID(cmp.Or(c.ClientID, "tickgroup")),
		kgo.RetryBackoffFn(RetryBackoff),
		// A request's retries are bounded by franz-go's retry timeout (30 s; a group request's, the session),
		// not by their count: at RetryBackoff's pace its default 20 tries would give up within 5 s, and a
		// process starting while a broker restarts would exit.
		kgo.RequestRetries(requestRetries),
		// How soon a client may ask for metadata again after an error sent it there (franz-go's default: 5 s).
		// After a broker restart, partition leaderships change epochs, and a producer's pending records wait for
		// the new metadata: a worker's outcomes would wait seconds past the broker's return.
		kgo.MetadataMinAge(500 * time.Millisecond),
	}
	if logger != nil && strings.EqualFold(c.SASL.Mechanism, "plain") && !c.TLS.Enabled && c.TLS.CAFile == "" && c.TLS.CertFile == "" {
		// Allowed (a broker on a trusted network may want it), but never silently.
		plainWarning.Do(func() {
			logger.Warn("SASL PLAIN without TLS sends the password in clear text to the brokers; enable --tls or use SCRAM")
		})
	}
	if logger != nil {
		opts = append(opts, kgo.WithLogger(clientLogger(logger.With("component", "kgo"))))
	}
	if c.TLS.Enabled || c.TLS.CAFile != "" || c.TLS.CertFile != "" {
		cfg, err := c.TLS.config()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.Dialer(tlsDialer(cfg, c.TLS.CertFile != "")))
	}
	switch strings.ToLower(c.SASL.Mechanism) {
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: c.SASL.Username, Pass: c.SASL.Password}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.SASL.Username, Pass: c.SASL.Password}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.SASL.Username, Pass: c.SASL.Password}.AsSha512Mechanism()))
	}
	return opts, nil
}

func (t TLSConfig) config() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // an explicit operator choice, documented as testing only
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: reading CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: no PEM certificates in %s", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: loading client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// clientLogger adapts logger for franz-go and keeps franz-go quiet unless logger is at debug. At info, franz-go
// logs every transaction it begins and ends, every group join and metadata refresh: two lines per transaction,
// megabytes an hour for a leader of one per-second schedule. Those lines help to debug a client, not to
// operate tickgroup, whose own logs say what happens (leader terms, schedule changes, failures); so franz-go
// gets warn and error only, and everything once the operator asks for debug.
func clientLogger(logger *slog.Logger) kgo.Logger {
	inner := kslog.New(logger)
	if inner.Level() >= kgo.LogLevelDebug {
		return inner
	}
	return capped{inner: inner, level: min(inner.Level(), kgo.LogLevelWarn)}
}

// capped is a kgo.Logger that drops lines above level (kgo levels grow with verbosity).
type capped struct {
	inner kgo.Logger
	level kgo.LogLevel
}

func (c capped) Level() kgo.LogLevel { return c.level }

func (c capped) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if level <= c.level {
		c.inner.Log(level, msg, keyvals...)
	}
}

// DefaultPool is the name of the default pool, whose topics and group have no pool in their names.
const DefaultPool = "default"

// Pool returns n with the work, results and dead-letter topics and the worker group of pool: for the default
// pool ("" or DefaultPool) those of the namespace (<ns>.work, ...), for another <ns>.pool.<pool>.work,
// .results, .dlq and the group <ns>.pool.<pool>.workers.
func (n Names) Pool(pool string) Names {
	if pool == "" || pool == DefaultPool {
		pool = ""
	}
	if pool == n.PoolName {
		return n
	}
	prefix := n.Namespace
	if pool != "" {
		prefix = n.Namespace + ".pool." + pool
	}
	n.PoolName = pool
	n.Work, n.Results, n.DLQ, n.WorkerGroup = prefix+".work", prefix+".results", prefix+".dlq", prefix+".workers"
	return n
}

// PoolPrefix is the prefix of every topic and group of the namespace's pools other than the default, for
// prefixed ACLs and for finding them.
func (n Names) PoolPrefix() string { return n.Namespace + ".pool." }

// PoolOfWork returns the pool whose work topic is topic, and whether topic is a pool's work topic.
func (n Names) PoolOfWork(topic string) (string, bool) {
	if topic == n.Pool("").Work {
		return "", true
	}
	rest, ok := strings.CutPrefix(topic, n.PoolPrefix())
	if !ok {
		return "", false
	}
	pool, ok := strings.CutSuffix(rest, ".work")
	return pool, ok && pool != "" && !strings.Contains(pool, ".")
}

// requestRetries is how many times a client tries a request: more than its retry timeout allows at RetryBackoff.
const requestRetries = 1000

// Bounds of RetryBackoff.
const (
	minRetryBackoff = 100 * time.Millisecond
	maxRetryBackoff = 250 * time.Millisecond
)

// RetryBackoff is every client's wait before it tries a failed request again (its fails-th failure in a row):
// 100 ms, then 200 ms, then 250 ms, each less up to a fifth at random so that a fleet does not retry in step.
// franz-go's default grows to 5 s, and after an outage of the broker each client could sleep that long past the
// broker's return: a group rejoined, a ledger read back and the held ticks started seconds late, and members that
// rejoin far apart cost a second rebalance. Ticks are due every second; a client that tries four times a second
// costs a broker nothing.
func RetryBackoff(fails int) time.Duration {
	d := maxRetryBackoff
	if fails < 3 {
		d = minRetryBackoff << max(fails-1, 0)
	}
	return d - time.Duration(rand.Int64N(int64(d/5)+1))
}
