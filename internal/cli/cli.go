// Package cli holds what the tickgroup commands share on the command line: the common flags (brokers, namespace,
// admin address, logging, Kafka security), their TICKGROUP_* environment variables, the logger they configure,
// and the usage-error type that maps to exit status 2.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/kafka"
)

// UsageError is a mistake on the command line or in a file given on it. Commands exit with status 2 for it.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error { return UsageError{fmt.Errorf(format, args...)} }

// ExitCode maps the error of a command to its exit status: 0 for nil (and flag.ErrHelp), 2 for a UsageError,
// 1 otherwise.
func ExitCode(err error) int {
	var ue UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	default:
		return 1
	}
}

// SignalsHandled is the message of the debug line a long-running command logs first, once its flags are parsed:
// main installs the handling of SIGINT and SIGTERM (signal.NotifyContext) before anything else it does, so by
// this line either signal is a graceful stop. Before main runs, during the Go runtime's start and the package
// initializers, a signal still takes its default action. The end-to-end tests time their start-up signals from
// this line.
const SignalsHandled = "handling SIGINT and SIGTERM"

// Common are the flags of every long-running command and every command that talks to Kafka.
type Common struct {
	Kafka       kafka.Config
	MetricsAddr string
	LogLevel    string
	LogFormat   string

	brokers string
}

// PublicKafka is Kafka as the tickgroup API takes it, for the commands' Ticker, Worker and Schedules. (The
// conversions of TLS and SASL compile only while the API's types have the same fields as package kafka's;
// TestPublicKafka checks the rest.)
func (c *Common) PublicKafka() tickgroup.KafkaConfig {
	k := c.Kafka
	return tickgroup.KafkaConfig{Brokers: k.Brokers, Namespace: k.Namespace, ClientID: k.ClientID,
		TLS: tickgroup.TLSConfig(k.TLS), SASL: tickgroup.SASLConfig(k.SASL)}
}

// Register adds the common flags to fs. metricsAddr is the default admin address of a command that serves one
// (run); a command that does not passes "" and has no --metrics-addr.
func (c *Common) Register(fs *flag.FlagSet, metricsAddr string) {
	fs.StringVar(&c.brokers, "brokers", "localhost:9092", "Kafka seed brokers, comma-separated")
	fs.StringVar(&c.Kafka.Namespace, "namespace", kafka.DefaultNamespace, "prefix of every topic and group: <ns>.ticker, <ns>.work, ...")
	if metricsAddr != "" {
		fs.StringVar(&c.MetricsAddr, "metrics-addr", metricsAddr, "admin HTTP address serving /metrics, /-/healthy and /-/ready (empty: off)")
	}
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format: text or json")
	fs.BoolVar(&c.Kafka.TLS.Enabled, "tls", false, "connect to the brokers with TLS")
	fs.StringVar(&c.Kafka.TLS.CAFile, "tls-ca", "", "PEM file of the CAs that sign the brokers' certificates (implies --tls)")
	fs.StringVar(&c.Kafka.TLS.CertFile, "tls-cert", "", "PEM client certificate for mutual TLS (implies --tls)")
	fs.StringVar(&c.Kafka.TLS.KeyFile, "tls-key", "", "PEM key of --tls-cert")
	fs.StringVar(&c.Kafka.TLS.ServerName, "tls-server-name", "", "name to verify in the brokers' certificates (default: the broker host)")
	fs.BoolVar(&c.Kafka.TLS.InsecureSkipVerify, "tls-insecure-skip-verify", false, "do not verify the brokers' certificates (testing only)")
	fs.StringVar(&c.Kafka.SASL.Mechanism, "sasl-mechanism", "", "SASL mechanism: plain, scram-sha-256 or scram-sha-512 (empty: no SASL)")
	fs.StringVar(&c.Kafka.SASL.Username, "sasl-username", "", "SASL user name")
	fs.StringVar(&c.Kafka.SASL.Password, "sasl-password", "", "SASL password (prefer --sasl-password-file, or the TICKGROUP_SASL_PASSWORD variable)")
	fs.StringVar(&c.Kafka.SASL.PasswordFile, "sasl-password-file", "", "file holding the SASL password, read at start, trailing newline dropped (not with --sasl-password)")
}

// Finish completes the configuration after parsing and checks it.
func (c *Common) Finish() error {
	c.Kafka.Brokers = nil
	for _, b := range strings.Split(c.brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			c.Kafka.Brokers = append(c.Kafka.Brokers, b)
		}
	}
	if len(c.Kafka.Brokers) == 0 {
		return Usagef("--brokers: at least one broker is needed")
	}
	if err := c.Kafka.Validate(); err != nil {
		return UsageError{err}
	}
	if err := c.Kafka.ReadPasswordFile(); err != nil {
		return UsageError{err}
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return UsageError{err}
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return Usagef("--log-format %q: want text or json", c.LogFormat)
	}
	return nil
}

// Logger returns the logger the flags ask for, writing to w.
func (c *Common) Logger(w io.Writer) *slog.Logger {
	level, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// EnvName is the environment variable of a flag: TICKGROUP_ and the flag name in upper case with '_' for '-'.
func EnvName(flagName string) string {
	return "TICKGROUP_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse parses args into fs, then fills every flag not given on the command line from its TICKGROUP_*
// variable. The command line wins over the environment. Errors are UsageErrors (flag.ErrHelp passes through).
//
// fs's output is where help goes: -h or --help prints fs.Usage there (give it the command's stdout, so the help
// can be paged or grepped) and returns flag.ErrHelp, which is exit status 0. A mistake does not print the whole
// usage: its error says what is wrong and points to --help, and the command prints it on stderr.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard) // the flag package prints errors and usage there; the error is returned instead
	perr := fs.Parse(args)
	fs.SetOutput(out)
	if err := perr; err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if fs.Usage != nil {
				fs.Usage()
			} else {
				fs.PrintDefaults()
			}
			return err
		}
		return Usagef("%v (see '%s --help')", err, fs.Name())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		if v := getenv(EnvName(f.Name)); v != "" {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = Usagef("%s=%q: %v", EnvName(f.Name), v, serr)
			}
		}
	})
	return err
}

// CommonEnv returns getenv restricted to the variables of the common flags (connection, logging and admin): for a command whose own flags describe what it writes (ticker schedule put), so that a
// variable meant for another command on the host (a worker's TICKGROUP_POOL or TICKGROUP_TIMEOUT) never shapes
// a schedule.
func CommonEnv(getenv func(string) string) func(string) string {
	common := map[string]bool{}
	for _, g := range flagGroups {
		for _, n := range g.names {
			common[EnvName(n)] = true
		}
	}
	return func(name string) string {
		if !common[name] {
			return ""
		}
		return getenv(name)
	}
}

// The common flags by heading in usage: a command's own flags come first, then these.
var flagGroups = []struct {
	title string
	names []string
}{
	{"Connection flags", []string{"brokers", "namespace", "tls", "tls-ca", "tls-cert", "tls-key", "tls-server-name",
		"tls-insecure-skip-verify", "sasl-mechanism", "sasl-username", "sasl-password", "sasl-password-file"}},
	{"Logging and admin flags", []string{"log-level", "log-format", "metrics-addr"}},
}

// Usage returns a flag.FlagSet usage function that prints head, then the command's own flags, then the common
// flags under their headings (connection; logging and admin), each with its environment variable. A default is
// printed once, and only when it is not the zero value (a flag whose zero means something else says so in its
// own text).
func Usage(fs *flag.FlagSet, head string) func() { return usage(fs, head, true) }

// UsageCommonEnv is Usage for a command parsed with CommonEnv: its own flags are shown without a variable.
func UsageCommonEnv(fs *flag.FlagSet, head string) func() { return usage(fs, head, false) }

func usage(fs *flag.FlagSet, head string, ownEnv bool) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintln(w, strings.TrimSpace(head))
		grouped := map[string]bool{}
		for _, g := range flagGroups {
			for _, n := range g.names {
				grouped[n] = true
			}
		}
		var own []*flag.Flag
		fs.VisitAll(func(f *flag.Flag) {
			if !grouped[f.Name] {
				own = append(own, f)
			}
		})
		if len(own) > 0 {
			if ownEnv {
				fmt.Fprintln(w, "\nFlags (each also read from the environment variable shown):")
			} else {
				fmt.Fprintln(w, "\nFlags (command line only: never read from the environment):")
			}
			for _, f := range own {
				printFlag(w, f, ownEnv)
			}
		}
		for _, g := range flagGroups {
			header := false
			for _, n := range g.names {
				f := fs.Lookup(n)
				if f == nil {
					continue
				}
				if !header {
					fmt.Fprintf(w, "\n%s:\n", g.title)
					header = true
				}
				printFlag(w, f, true)
			}
		}
	}
}

func printFlag(w io.Writer, f *flag.Flag, env bool) {
	name, usage := flag.UnquoteUsage(f)
	if t, ok := f.Value.(interface{ Type() string }); ok && name == "value" {
		name = t.Type()
	}
	line := "  --" + f.Name
	if name != "" {
		line += " " + name
	}
	fmt.Fprintf(w, "%s\n    \t%s", line, usage)
	switch d := f.DefValue; {
	case d == "" || d == "0" || d == "0s" || d == "false":
	case name == "string":
		fmt.Fprintf(w, " (default %q)", d)
	default:
		fmt.Fprintf(w, " (default %s)", d)
	}
	if env {
		fmt.Fprintf(w, " [%s]", EnvName(f.Name))
	}
	fmt.Fprintln(w)
}

// Stopped turns the error of a command that a signal interrupted into a clean stop: once ctx (the signal
// context) is done, a cancellation error is the expected way out, for example a signal that arrives while
// topics are still being created at start-up, and so is a Kafka client closed by that shutdown under a call
// that was still waiting on it (only that: a failure joined with it stays). Any other error stays.
func Stopped(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || closedOnly(err)) {
		return nil
	}
	return err
}

// closedOnly reports whether err is kgo.ErrClientClosed, wrapped or joined with nothing else.
func closedOnly(err error) bool {
	switch x := err.(type) { //nolint:errorlint // the unwrapping is this function's own

	case interface{ Unwrap() []error }:
		errs := x.Unwrap()
		for _, e := range errs {
			if !closedOnly(e) {
				return false
			}
		}
		return len(errs) > 0
	case interface{ Unwrap() error }:
		if inner := x.Unwrap(); inner != nil {
			return closedOnly(inner)
		}
	}
	return err == kgo.ErrClientClosed //nolint:errorlint // a leaf: what wraps it was unwrapped above
}
